"""The ``lmc`` command line: its subcommands and their options."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from .. import __version__
from ..config import MINIMUM_OUTPUT_BYTES, Limits
from ..options.interpreters import add_interpreter_options
from ..options.remote import add_remote_options
from ..options.timeouts import add_timeout_option
from .batch import MAX_LINE_BYTES
from .bench import cmd_bench
from .commands import cmd_languages
from .environments import ENV_DESCRIPTION, add_env_commands
from .pages import docs_link
from .running import cmd_demo, cmd_run
from .setup import SETUP_DESCRIPTION, add_setup_options, cmd_setup

__all__ = ["OneLineParser", "build_parser"]

EXIT_STATUSES = """\
exit status:
  0    every line was run (errors in the code itself are replies, still 0)
  1    at least one line was not understood: not JSON, not a message, an unknown
       or unavailable language (each got a "not understood" reply)
  2    usage: a bad option, or a file that cannot be read; with --remote, a
       server that refused the session or could not be reached
  130  interrupted (Ctrl-C); "lmc: interrupted" is said on stderr"""

RUN_DESCRIPTION = """\
Run the assistant code messages of a JSON-lines file of LMC messages, in order,
in one computer. On a terminal the code, its output and its status are shown as
text; images and HTML are saved to files (a new temporary folder unless
--output-dir is given) and their paths printed. Piped, or with --jsonl, every
computer message is written to stdout as one JSON line."""

SERVE_DESCRIPTION = """\
Serve sessions, each in a sandbox of its own, over HTTP and WebSocket. Every option
is also an environment variable (LMC_SERVE_<NAME>) and a key of the --config file; a
flag beats the variable, which beats the file, which beats the default. Sizes are
bytes, or take a binary unit (512K, 512M, 2G; K is 1024); 'none' turns a limit off."""


class OneLineParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line naming the command's ``--help``, and
    whose ``--help`` ends with the link to its docs page (``docs``, as it is)."""

    docs: str | None = None

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def format_help(self) -> str:
        # After the epilog, and never wrapped: a long link stays whole.
        text = super().format_help()
        return f"{text}\n{self.docs}\n" if self.docs else text


def _at_least(least: int) -> Callable[[str], int]:
    """An integer option's type: a whole number of at least ``least``."""

    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        return value

    return whole


_positive = _at_least(1)


def _batch_options(parser: argparse.ArgumentParser) -> None:
    """The options ``lmc run`` and ``lmc demo`` share."""
    add_timeout_option(parser, "; with --remote the default is the server's, which caps it")
    parser.add_argument(
        "--output-bytes",
        type=_at_least(MINIMUM_OUTPUT_BYTES),
        default=Limits().output_bytes,
        metavar="N",
        help=f"bytes one execution returns; the rest is cut (default {Limits().output_bytes})",
    )
    parser.add_argument(
        "--line-bytes",
        type=_positive,
        default=MAX_LINE_BYTES,
        metavar="N",
        help=f"longest input line read, in bytes (default {MAX_LINE_BYTES})",
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--jsonl", action="store_true", help="JSON lines even on a terminal (the default piped)"
    )
    shown.add_argument(
        "--chunks", action="store_true", help="write Open Interpreter-style start/end chunks"
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        help="on a terminal, save images and HTML here (default: a new temporary folder)",
    )
    add_interpreter_options(parser)
    add_remote_options(parser, default_languages="python")


def _batch_commands(sub: argparse._SubParsersAction[OneLineParser]) -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    run = sub.add_parser(
        "run",
        help="execute the assistant code messages of a JSON-lines file",
        description=RUN_DESCRIPTION,
        epilog=EXIT_STATUSES,
        formatter_class=formatter,
    )
    run.add_argument("file", nargs="?", help="JSON lines of LMC messages; - or nothing: stdin")
    _batch_options(run)
    run.set_defaults(func=cmd_run)
    demo = sub.add_parser(
        "demo",
        help="run the demo that ships with the package, as lmc run does",
        description="Run the packaged demo (Python, shell, JavaScript, R, HTML) as lmc run "
        "does; the languages not installed here are skipped with a note.",
        epilog=EXIT_STATUSES,
        formatter_class=formatter,
    )
    _batch_options(demo)
    demo.set_defaults(func=cmd_demo)


def _e2b(app: Any, service: Any) -> Any:
    """E2B's API on ``lmc serve`` (unless ``--no-e2b``), imported when it starts."""
    from ..e2b import install_e2b

    return install_e2b(app, service)


def _command(
    sub: argparse._SubParsersAction[OneLineParser],
    name: str,
    help: str,
    configure: Callable[[OneLineParser], object],
    description: str | None = None,
    **defaults: Any,
) -> None:
    """Subcommand ``name``: its options set by ``configure``, then ``defaults``
    (``func``, or ``extra`` for a command run elsewhere)."""
    command = sub.add_parser(name, help=help, description=description)
    configure(command)
    command.set_defaults(**defaults)


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``lmc`` command; each subcommand sets ``func`` (and ``extra``)."""
    parser = OneLineParser(prog="lmc", description="The computer for LLM agents.")
    parser.add_argument("--version", action="version", version=f"lmc-runtime {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    _batch_commands(sub)
    what = "list languages and whether they run here"
    _command(sub, "languages", what, add_interpreter_options, func=cmd_languages)
    what = "install what is missing and prepare the host for sandboxes (--dry-run: say what)"
    _command(sub, "setup", what, add_setup_options, SETUP_DESCRIPTION, func=cmd_setup)
    what = "make, list and remove environments sessions run in"
    _command(sub, "env", what, add_env_commands, ENV_DESCRIPTION)
    bench = sub.add_parser("bench", help="measure against raw jupyter-client")
    bench.add_argument("--quick", action="store_true", help="fewer samples")
    bench.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    bench.add_argument(
        "--only",
        choices=["memory", "service", "e2b", "density", "egress", "checkpoints"],
        help="one section: flat memory, RemoteComputer on lmc serve, E2B's SDK on it,"
        " density (memory per idle sandboxed session, cold starts, a burst), egress"
        " (HTTPS through a session's egress policy against direct; needs root), or"
        " checkpoints (checkpoint, rollback and fork of a Python interpreter)",
    )
    bench.add_argument(
        "--large",
        action="store_true",
        help="with --only density: N = 300 idle sessions too (about 5 GiB)",
    )
    bench.add_argument(
        "--benchmarks",
        type=Path,
        metavar="DIR",
        help="a checkout's benchmarks/ folder (default: $LMC_BENCHMARKS, else the one"
        " beside an editable install)",
    )
    bench.set_defaults(func=cmd_bench)
    from ..mcp.command import configure_parser as configure_mcp
    from ..repl import add_arguments as configure_repl
    from ..service.command import configure_parser as configure_serve

    what = "an interactive REPL: type code, watch it run"
    _command(sub, "repl", what, configure_repl, extra="repl")
    what = "run the sandboxed HTTP and WebSocket service"
    serve_with_e2b = functools.partial(configure_serve, extensions=(_e2b,))
    _command(sub, "serve", what, serve_with_e2b, SERVE_DESCRIPTION, extra="serve")
    _command(sub, "mcp", "a Model Context Protocol server (stdio or HTTP)", configure_mcp)
    parser.docs = docs_link("")
    for name, command in sub.choices.items():
        command.docs = docs_link(name)
    return parser
