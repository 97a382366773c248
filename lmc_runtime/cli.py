"""The ``lmc`` command: ``run``, ``languages``, ``setup``, ``bench``, ``repl`` and ``serve``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

from . import replies
from .chunks import iter_chunks
from .computer import Computer
from .config import Limits, Timeouts
from .errors import MessageError
from .intake import read_json_object
from .messages import Message, parse_message

__all__ = ["main"]


def _write(out: IO[str], data: Any) -> None:
    line = json.dumps(data, ensure_ascii=False)
    try:
        out.write(line + "\n")
    except UnicodeEncodeError:  # lone surrogates: escape them, still one valid JSON line
        out.write(json.dumps(data) + "\n")
    out.flush()


#: ``lmc run`` answers a longer input line with "not understood" instead of reading it.
MAX_LINE_BYTES = 16 << 20


def _lines(source: IO[bytes], limit: int) -> Iterator[bytes | None]:
    """Each line of ``source``; None for one longer than ``limit`` bytes, which is skipped
    in pieces so it never sits in memory whole."""
    while line := source.readline(limit + 1):
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        while (rest := source.readline(1 << 20)) and not rest.endswith(b"\n"):
            pass
        yield None


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _requests(
    lines: Iterable[bytes | None], limit: int = MAX_LINE_BYTES
) -> Iterator[tuple[Any, Message | None]]:
    """Each input line as (what to send to the computer, or None to pass over it).

    A line that cannot be read as a message object gets its not-understood reply here,
    whatever it holds: one reply per line, and the batch goes on.
    """
    for number, raw in enumerate(lines, 1):
        if raw is not None and not raw.strip():
            continue
        try:
            if raw is None:
                raise MessageError(f"is longer than {limit} bytes")
            data = read_json_object(raw)
        except MessageError as exc:
            reason = f"line {number} {exc.reason}"
            yield None, replies.not_understood(reason, None, status="malformed")
            continue
        try:
            message = parse_message(data)
        except Exception:
            yield data, None  # malformed: the computer answers "not understood"
            continue
        if message.role == "assistant" and message.type == "code":
            yield data, None
        # Other well-formed messages are conversation context: nothing to run.


def _cmd_run(args: argparse.Namespace) -> int:
    source: IO[bytes] = sys.stdin.buffer if args.file in (None, "-") else open(args.file, "rb")  # noqa: SIM115
    limits = Limits(output_bytes=args.output_bytes) if args.output_bytes else Limits()
    out = sys.stdout
    with source, Computer(timeouts=Timeouts(execution=args.timeout), limits=limits) as computer:
        for request, reply in _requests(_lines(source, args.line_bytes), args.line_bytes):
            stream: Iterable[Message] = [reply] if reply is not None else computer.run(request)
            if args.chunks:
                for chunk in iter_chunks(stream):
                    _write(out, chunk)
            else:
                for message in stream:
                    _write(out, message.to_dict())
    return 0


def _cmd_languages(args: argparse.Namespace) -> int:
    computer = Computer()
    for status in computer.languages.values():
        state = "available" if status.available else f"unavailable: {status.reason}"
        aliases = f" (also {', '.join(status.aliases)})" if status.aliases else ""
        sys.stdout.write(f"{status.name}{aliases}: {state}\n")
    return 0


def _cmd_setup(args: argparse.Namespace) -> int:
    from .backends.typescript import node_packages_dir
    from .sysdeps import ensure_node_packages, ensure_system_packages

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    ensure_system_packages(say=say)
    ensure_node_packages(node_packages_dir(), needed_for="TypeScript", say=say)
    from .sandbox.hostprep import prepare_host

    prepare_host(say)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from .bench import format_memory, format_report, run_benchmark, run_memory

    if args.only == "memory":
        from dataclasses import asdict

        flat, notes = run_memory(quick=args.quick)
        if args.json:
            _write(sys.stdout, {"flat_memory": asdict(flat), "passed": flat.passed, "notes": notes})
        else:
            sys.stdout.write(format_memory(flat, notes))
        return 0
    report = run_benchmark(quick=args.quick)
    if args.json:
        _write(sys.stdout, report.to_dict())
    else:
        sys.stdout.write(format_report(report))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lmc", description="The computer for LLM agents.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="execute the assistant code messages of a JSON-lines file")
    run.add_argument("file", nargs="?", help="JSON lines of LMC messages; - or nothing: stdin")
    run.add_argument("--timeout", type=float, default=None, help="seconds per execution")
    run.add_argument("--output-bytes", type=int, default=0, help="output budget per execution")
    run.add_argument(
        "--line-bytes",
        type=_positive,
        default=MAX_LINE_BYTES,
        help=f"longest input line read (default {MAX_LINE_BYTES})",
    )
    run.add_argument(
        "--chunks", action="store_true", help="write Open Interpreter-style start/end chunks"
    )
    run.set_defaults(func=_cmd_run)

    sub.add_parser("languages", help="list languages and whether they run here").set_defaults(
        func=_cmd_languages
    )
    sub.add_parser("setup", help="install the system packages that are missing").set_defaults(
        func=_cmd_setup
    )
    bench = sub.add_parser("bench", help="measure against raw jupyter-client")
    bench.add_argument("--quick", action="store_true", help="fewer samples")
    bench.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    bench.add_argument("--only", choices=["memory"], help=argparse.SUPPRESS)
    bench.set_defaults(func=_cmd_bench)
    from .repl import add_arguments as configure_repl

    configure_repl(sub.add_parser("repl", help="an interactive REPL: type code, watch it run"))
    from .service.command import configure_parser as configure_serve

    configure_serve(sub.add_parser("serve", help="run the sandboxed HTTP and WebSocket service"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lmc`` console script."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
