"""``lmc run`` and ``lmc demo``: a batch of LMC messages, shown for people or machines."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from importlib import resources
from pathlib import Path
from typing import IO, Any, Protocol

from ..computer import Computer, LanguageStatus
from ..config import Limits
from ..errors import RemoteError
from ..messages import Message
from ..options.interpreters import chosen_interpreters
from ..options.remote import remote_computer
from ..options.timeouts import execution_timeouts
from .batch import Runner, Sink, read_lines, requests, run_batch
from .sinks import ChunkSink, JsonSink
from .terminal import TerminalSink

__all__ = ["STDIN_HINT", "cmd_demo", "cmd_run", "demo_source"]

STDIN_HINT = (
    "lmc run: reading LMC messages as JSON lines from the terminal; "
    "end with Ctrl-D (see lmc run --help)"
)


def demo_source() -> IO[bytes]:
    """The demo that ships inside the package, opened for reading."""
    return resources.files("lmc_runtime.demo").joinpath("demo.jsonl").open("rb")


class _Batch(Runner, Protocol):
    """What a batch runs on: a Computer, or a RemoteComputer with ``--remote``."""

    @property
    def languages(self) -> dict[str, LanguageStatus]: ...

    def __enter__(self) -> _Batch: ...

    def __exit__(self, *exc_info: object) -> None: ...


def _open(args: argparse.Namespace) -> _Batch:
    if args.remote:
        return remote_computer(args)
    limits = Limits(output_bytes=args.output_bytes)
    return Computer(
        timeouts=execution_timeouts(args.timeout), limits=limits, **chosen_interpreters(args)
    )


@contextmanager
def _computer(args: argparse.Namespace) -> Iterator[_Batch]:
    """The batch's Computer, started with Ctrl-C held back until it is up.

    An interrupt landing while the Computer starts its event-loop thread would leave
    that thread running and the start waiting for it forever; held, it is raised once
    the Computer is up, and leaving the ``with`` closes it.
    """
    held: list[int] = []
    with ExitStack() as stack:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
        try:
            computer = stack.enter_context(_open(args))
        finally:
            signal.signal(signal.SIGINT, previous)
        if held:
            raise KeyboardInterrupt
        yield computer


def _sink(args: argparse.Namespace) -> Sink:
    """JSON lines when asked or piped; text for people when stdout is a terminal."""
    if args.chunks:
        return ChunkSink(sys.stdout, sys.stderr)
    if args.jsonl or not sys.stdout.isatty():
        return JsonSink(sys.stdout, sys.stderr)
    return TerminalSink(sys.stdout, args.output_dir, live=os.environ.get("TERM", "dumb") != "dumb")


def _exit_status(not_understood: int) -> int:
    return 1 if not_understood else 0


def _usage_error(text: str) -> int:
    sys.stderr.write(f"lmc: {text}\n")
    return 2


def cmd_run(args: argparse.Namespace) -> int:
    """Run every code message of the file (or stdin); see the exit statuses in --help."""
    if args.file in (None, "-"):
        source: IO[bytes] = sys.stdin.buffer
        if sys.stdin.isatty():
            sys.stderr.write(STDIN_HINT + "\n")
            sys.stderr.flush()
    else:
        try:
            source = open(args.file, "rb")  # noqa: SIM115  (closed by the with below)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            hint = " (lmc demo runs the demo that ships with the package)"
            named_demo = Path(args.file).name == "demo.jsonl"
            return _usage_error(f"cannot read {args.file}: {reason}{hint if named_demo else ''}")
    sink = _sink(args)
    try:
        with source, _computer(args) as computer:
            items = requests(read_lines(source, args.line_bytes), args.line_bytes)
            return _exit_status(run_batch(computer, items, sink))
    except RemoteError as exc:
        return _usage_error(f"{args.remote}: {exc}")


def _available_only(
    computer: _Batch, items: Iterable[tuple[Any, Message | None]], sink: Sink
) -> Iterator[tuple[Any, Message | None]]:
    """``items`` without the requests in languages this machine cannot run (said once)."""
    statuses = computer.languages.values()
    missing = {
        alias: status.reason
        for status in statuses
        if not status.available
        for alias in (status.name, *status.aliases)
    }
    for request, reply in items:
        language = request.get("format") if isinstance(request, dict) else None
        if isinstance(language, str) and language in missing:
            sink.note(f"(the demo's {language} example is skipped: {missing[language]})")
            continue
        yield request, reply


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the packaged demo like ``lmc run``, skipping languages not installed here."""
    sink = _sink(args)
    try:
        with demo_source() as source, _computer(args) as computer:
            items = requests(read_lines(source, args.line_bytes), args.line_bytes)
            return _exit_status(run_batch(computer, _available_only(computer, items, sink), sink))
    except RemoteError as exc:
        return _usage_error(f"{args.remote}: {exc}")
