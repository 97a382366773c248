"""The ``lmc repl`` command line, and where the REPL keeps its files."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..options.interpreters import Interpreters, add_interpreter_options, chosen_interpreters
from ..options.remote import add_remote_options
from ..options.timeouts import add_timeout_option

__all__ = ["MODES", "ReplOptions", "add_arguments", "state_dir"]

#: Displays: rich (colour, live code view), plain (text only), jsonl (raw LMC messages).
MODES = ("rich", "plain", "jsonl")


def state_dir(env: Mapping[str, str]) -> Path:
    """The REPL's state directory: ``$LMC_STATE_DIR``, else ``$XDG_STATE_HOME/lmc``,
    else ``~/.local/state/lmc``."""
    if env.get("LMC_STATE_DIR"):
        return Path(env["LMC_STATE_DIR"]).expanduser()
    if env.get("XDG_STATE_HOME"):
        return Path(env["XDG_STATE_HOME"]).expanduser() / "lmc"
    return Path.home() / ".local" / "state" / "lmc"


@dataclass(frozen=True)
class ReplOptions:
    """Everything ``lmc repl`` was asked for."""

    language: str = "python"
    mode: str = "rich"
    timeout: float | None = None
    state: Path = Path(".lmc-state")
    image_dir: Path = Path(".lmc-state/images")
    preview: bool = True
    #: The interpreters code runs in (``Computer(python=, node=, r=)``); None: the default.
    interpreters: Interpreters = field(
        default_factory=lambda: Interpreters(python=None, node=None, r=None)
    )
    #: ``--remote``: the parsed arguments that open a RemoteComputer; None: run here.
    remote: argparse.Namespace | None = None

    @property
    def history_path(self) -> Path:
        return self.state / "history"

    @classmethod
    def from_args(cls, args: argparse.Namespace, env: Mapping[str, str]) -> ReplOptions:
        """The options of parsed ``args``; ``NO_COLOR`` (non-empty) means plain."""
        mode = "jsonl" if args.jsonl else "plain" if args.plain or env.get("NO_COLOR") else "rich"
        state = state_dir(env)
        return cls(
            language=args.language,
            mode=mode,
            timeout=args.timeout,
            state=state,
            image_dir=Path(args.image_dir).expanduser() if args.image_dir else state / "images",
            preview=not args.no_preview,
            interpreters=chosen_interpreters(args),
            remote=args if getattr(args, "remote", None) else None,
        )


def _run(args: argparse.Namespace) -> int:
    from .launch import run_repl

    return run_repl(ReplOptions.from_args(args, os.environ))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``lmc repl`` options to ``parser`` and make it run the REPL."""
    parser.add_argument(
        "-l", "--language", default="python", help="the language to start in (default: python)"
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--plain", action="store_true", help="plain text, no colours (NO_COLOR too)")
    shown.add_argument("--jsonl", action="store_true", help="print the raw LMC messages")
    add_timeout_option(parser)
    parser.add_argument(
        "--image-dir", default=None, help="where images go (default: STATE_DIR/images)"
    )
    parser.add_argument("--no-preview", action="store_true", help="no inline image previews")
    add_interpreter_options(parser)
    add_remote_options(parser, default_languages="python")
    parser.set_defaults(func=_run)
