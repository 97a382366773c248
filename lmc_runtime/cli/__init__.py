"""The ``lmc`` command: ``run``, ``demo``, ``languages``, ``setup``, ``bench``, ``repl``
and ``serve``.

Only ``repl`` and ``serve`` need an extra of the package (``[repl]``, ``[serve]``);
without it they say, in one line, what to install.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from ..errors import MissingExtra
from .extras import require_extra
from .parser import build_parser

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    """The ``lmc`` argument parser (kept under its old name for callers that build it)."""
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lmc`` console script; returns its exit status."""
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:
        command = f"lmc {args.command}"
        sys.stderr.write(
            f"{command}: unrecognized arguments: {' '.join(unknown)} (see {command} --help)\n"
        )
        return 2
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        extra = getattr(args, "extra", None)
        if extra is not None:
            require_extra(f"lmc {args.command}", extra)
        code: int = args.func(args)
    except MissingExtra as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("lmc: interrupted\n")
        return 130
    except BrokenPipeError:  # `lmc demo | head -1`: the reader left; nothing more to say
        _quiet_stdout()
        return 1
    return code


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: its pipe is gone, and the flush at exit must not fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
