"""``--timeout``, as every command that runs code takes it: seconds, or ``0``/``none``
for no timeout; left out, the runtime's default
(:data:`~lmc_runtime.config.DEFAULT_EXECUTION_SECONDS`)."""

from __future__ import annotations

import argparse
import math

from ..config import DEFAULT_EXECUTION_SECONDS, Timeouts

__all__ = ["add_timeout_option", "execution_timeouts", "timeout_seconds"]


def timeout_seconds(text: str) -> float:
    """``--timeout``'s seconds; 0 for "no timeout" (``0`` or ``none``)."""
    if text.strip().lower() in ("0", "none"):
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be seconds (more than 0), 0 or none, not {text!r}")
    return value


def add_timeout_option(parser: argparse.ArgumentParser, also: str = "") -> None:
    """Add ``--timeout`` to ``parser``; ``also``: more for its help, after the default."""
    parser.add_argument(
        "--timeout",
        type=timeout_seconds,
        default=None,
        metavar="SECONDS",
        help="longest one execution may run before it is interrupted, its state kept "
        f"(default {DEFAULT_EXECUTION_SECONDS:g}; 0 or none: no timeout{also})",
    )


def execution_timeouts(seconds: float | None) -> Timeouts:
    """A Computer's timeouts for ``--timeout``'s value (None: the default; 0: none)."""
    if seconds is None:
        return Timeouts()
    return Timeouts(execution=seconds or None)
