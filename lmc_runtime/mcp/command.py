"""``lmc mcp``: its options, and how it starts (the SDK is imported only when it runs).

Over stdio (the default) the process serves the one client that started it;
``--http`` serves any number at ``http://HOST:PORT/mcp``, each MCP session with
a computer of its own, behind the bearer token rules of ``lmc serve``. Where
the code runs: this machine's interpreters, a bubblewrap sandbox per client
(``--sandbox``), or a session of a remote ``lmc serve`` (``--remote``).
Anything that stops a start is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MissingExtra
from ..options.interpreters import add_interpreter_options, chosen_interpreters
from ..options.timeouts import add_timeout_option, execution_timeouts

if TYPE_CHECKING:
    from .workspace import Opener

__all__ = ["configure_parser", "require_sdk", "run_mcp"]

DESCRIPTION = """\
A Model Context Protocol server: MCP clients (Claude Desktop, IDEs, agent
frameworks) get the tools execute, interrupt, restart and languages, and with
--sandbox or --remote read_file, write_file and list_files. Over stdio by
default; --http serves streamable HTTP at http://HOST:PORT/mcp."""


class StartRefused(Exception):
    """``lmc mcp`` cannot start; the message says why, in one line."""


def require_sdk() -> None:
    """:class:`MissingExtra` unless the MCP SDK (2.x, with ``mcp_types``) is installed."""
    try:
        import mcp.server.lowlevel  # noqa: F401
        import mcp_types  # noqa: F401
    except ImportError as exc:
        raise MissingExtra("lmc mcp", "mcp", missing=exc.name) from None


def _languages(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one language")
    return names


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``lmc mcp`` to ``parser``."""
    parser.description = DESCRIPTION
    add_timeout_option(parser)
    http = parser.add_argument_group("HTTP (streamable HTTP instead of stdio)")
    http.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp")
    http.add_argument("--host", default="127.0.0.1", help="address (default: 127.0.0.1)")
    http.add_argument("--port", type=int, default=8766, help="port, 0: any (default: 8766)")
    http.add_argument(
        "--token", help="bearer token clients send (default: $LMC_TOKEN, else made up and printed)"
    )
    http.add_argument("--no-auth", action="store_true", help="no token (loopback addresses only)")
    http.add_argument(
        "--max-sessions",
        type=_positive,
        default=16,
        metavar="N",
        help="MCP sessions at once, each with a computer of its own (default: 16)",
    )
    where = parser.add_argument_group("where code runs (default: this machine's interpreters)")
    kind = where.add_mutually_exclusive_group()
    kind.add_argument(
        "--sandbox", action="store_true", help="in a bubblewrap sandbox per client, as lmc serve"
    )
    kind.add_argument("--remote", metavar="URL", help="in a session of this lmc serve")
    where.add_argument(
        "--data-dir",
        type=Path,
        help="with --sandbox: where sandboxes live (default: a new temporary folder)",
    )
    where.add_argument(
        "--remote-token", help="with --remote: its token (default: $LMC_REMOTE_TOKEN, $LMC_TOKEN)"
    )
    where.add_argument(
        "--languages",
        type=_languages,
        default=["python", "shell"],
        metavar="LIST",
        help="with --remote: the session's languages (default: python,shell)",
    )
    add_interpreter_options(parser)
    parser.set_defaults(func=run_mcp)


def _opener(args: argparse.Namespace, root: Path | None) -> Opener:
    from .workspace import LocalOpener, RemoteOpener, SandboxOpener

    timeouts = execution_timeouts(args.timeout)
    if args.remote:
        token = args.remote_token or os.environ.get("LMC_REMOTE_TOKEN") or None
        return RemoteOpener(args.remote, token, args.languages, args.timeout or None)
    if root is not None:
        return SandboxOpener(root, timeouts=timeouts if args.timeout else None)
    return LocalOpener(timeouts, chosen_interpreters(args))


def _check_sandbox(data_dir: Path) -> None:
    from ..sandbox import sandbox_available
    from ..sandbox.bwrap import exposed_by, system_paths

    availability = sandbox_available()
    if not availability.available:
        raise StartRefused(
            f"--sandbox: the sandbox cannot run here: {availability.reason}. "
            "Install bubblewrap (apt-get install bubblewrap)."
        )
    bound = exposed_by(data_dir, system_paths())
    if bound is not None:
        raise StartRefused(f"--data-dir {data_dir} is inside {bound}, which every sandbox sees")


def run_mcp(args: argparse.Namespace) -> int:
    """Serve until the client leaves (stdio) or SIGINT/SIGTERM (HTTP); 2 if it cannot start."""
    require_sdk()
    temporary: Path | None = None
    try:
        root = None
        if args.sandbox:
            root = args.data_dir
            if root is None:
                root = temporary = Path(tempfile.mkdtemp(prefix="lmc-mcp-"))
                os.chmod(root, 0o711)  # sandboxes run as host uids of their own: let them pass
            root = root.absolute()
            _check_sandbox(root)
        opener = _opener(args, root)
        if args.http:
            _serve_http(args, opener)
        else:
            import anyio

            from .server import serve_stdio

            anyio.run(serve_stdio, opener)
    except StartRefused as exc:
        sys.stderr.write(f"lmc mcp: {exc}\n")
        return 2
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    return 0


def _serve_http(args: argparse.Namespace, opener: Opener) -> None:
    from ..web.auth import Authenticator, check_token_rules
    from .http import listen, serve_http

    token = None if args.no_auth else args.token or os.environ.get("LMC_TOKEN") or None
    generated = token is None and not args.no_auth
    if generated:
        token = secrets.token_urlsafe(32)
    try:  # the token rules of lmc serve
        check_token_rules(args.host, token, no_auth=args.no_auth)
        sock = listen(args.host, args.port)
    except (ValueError, OSError) as exc:
        raise StartRefused(str(exc)) from None
    if generated:
        sys.stdout.write(f"lmc mcp: generated token: {token}\n")
    auth = Authenticator(token, enabled=not args.no_auth)
    try:
        serve_http(opener, auth, sock, max_sessions=args.max_sessions)
    finally:
        sock.close()
