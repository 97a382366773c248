"""``--remote URL``: ``lmc run``, ``lmc demo`` and ``lmc repl`` on a session of a
remote ``lmc serve`` instead of interpreters on this machine."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..remote import RemoteComputer

__all__ = ["add_remote_options", "remote_computer"]


def _languages(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one language")
    return names


def add_remote_options(parser: argparse.ArgumentParser, *, default_languages: str) -> None:
    """Add ``--remote``, ``--token``, ``--languages`` and ``--transport`` to ``parser``."""
    group = parser.add_argument_group(
        "remote (run in a session of an lmc serve; needs the [client] extra)"
    )
    group.add_argument("--remote", metavar="URL", help="the server, e.g. http://127.0.0.1:8765")
    group.add_argument("--token", help="its bearer token (default: $LMC_TOKEN)")
    group.add_argument(
        "--languages",
        type=_languages,
        default=_languages(default_languages),
        metavar="LIST",
        help=f"the session's languages, comma-separated (default: {default_languages})",
    )
    group.add_argument(
        "--transport",
        choices=["http", "websocket"],
        default="http",
        help="one request per run, or one WebSocket for all (default: http)",
    )


def remote_computer(args: argparse.Namespace) -> RemoteComputer:
    """The RemoteComputer ``args`` ask for (not opened yet)."""
    from ..remote import RemoteComputer, RemoteTimeouts

    timeout = getattr(args, "timeout", None)
    return RemoteComputer(
        args.remote,
        token=args.token or os.environ.get("LMC_TOKEN") or None,
        languages=args.languages,
        transport=args.transport,
        timeouts=RemoteTimeouts(execution=timeout or None),
    )
