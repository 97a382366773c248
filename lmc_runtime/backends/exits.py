"""A sentence for how an interpreter process ended, for every backend."""

from __future__ import annotations

import signal

__all__ = ["describe_exit"]


def describe_exit(code: int | None, who: str) -> str:
    """How ``who`` ("the kernel", "node") ended, from its Popen return code."""
    if code is None:
        return f"{who} ended"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == signal.SIGKILL:
            return f"{who} was killed by SIGKILL (often the out-of-memory killer)"
        if -code == signal.SIGSEGV:
            return f"{who} crashed with a segmentation fault (SIGSEGV)"
        return f"{who} was killed by {name}"
    return f"{who} exited with code {code}"
