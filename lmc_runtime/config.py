"""Small immutable value objects that configure a :class:`~lmc_runtime.Computer`."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = [
    "DEFAULT_EXECUTION_SECONDS",
    "DEFAULT_INPUT_SECONDS",
    "DEFAULT_INTERRUPT_GRACE",
    "MINIMUM_OUTPUT_BYTES",
    "InputCallback",
    "Limits",
    "Timeouts",
]

#: How long one execution may run unless told otherwise (``Timeouts().execution``).
DEFAULT_EXECUTION_SECONDS = 300.0
#: How long stopped code has to stop before a restart (``Timeouts().interrupt_grace``).
DEFAULT_INTERRUPT_GRACE = 3.0
#: How long an input callback may take to answer (``Timeouts().input``).
DEFAULT_INPUT_SECONDS = 300.0
#: The least output budget (``Limits.output_bytes``).
MINIMUM_OUTPUT_BYTES = 64

#: Answers ``input()`` in user code: called with the prompt, returns the line.
#: It may be a plain function (run in a worker thread) or a coroutine function.
InputCallback = Callable[[str], "str | Awaitable[str]"]


def _check_positive(name: str, value: float | None) -> None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise ValueError(f"{name} must be a positive number of seconds or None, got {value!r}")


@dataclass(frozen=True)
class Timeouts:
    """Deadlines, in seconds, measured on a monotonic clock.

    ``execution``: how long one execution may run (default 300, as the sandboxed
    service's ``wall_seconds``; None: no limit). Past it the code is interrupted,
    its interpreter's state kept.
    ``interrupt_grace``: after an interrupt, how long the code has to stop
    before its kernel or process is restarted.
    ``startup``: how long a kernel or process may take to become ready.
    ``shutdown``: how long a clean shutdown may take before a kill.
    ``input``: how long an input callback may take to answer.
    """

    execution: float | None = DEFAULT_EXECUTION_SECONDS
    interrupt_grace: float = DEFAULT_INTERRUPT_GRACE
    startup: float = 60.0
    shutdown: float = 5.0
    input: float | None = DEFAULT_INPUT_SECONDS

    def __post_init__(self) -> None:
        for name in ("execution", "interrupt_grace", "startup", "shutdown", "input"):
            _check_positive(name, getattr(self, name))

    def with_execution(self, seconds: float | None) -> Timeouts:
        """A copy with another execution timeout."""
        return replace(self, execution=seconds)


@dataclass(frozen=True)
class Limits:
    """Per-execution output limits.

    ``output_bytes``: what one execution sends back, in UTF-8 bytes: each
    message's content (output text, an image's base64, an HTML page) plus 64
    bytes. Past it displays are left out with one notice, and of the text the
    head and the tail are kept, the middle is replaced by an "N bytes omitted"
    marker, and the whole output is saved to a file under
    ``spill_dir`` (the system temp directory when None). ``spill_bytes`` caps
    that file (None: no cap), so a flood of output cannot fill the disk.
    ``spill_route``: where a remote client fetches that file (``lmc serve``'s
    ``/v1/sessions/{id}/outputs/``): the marker and ``extras.output_path`` then
    name it there, the file's name appended, instead of by its path.
    """

    output_bytes: int = 256_000
    spill_dir: Path | None = None
    spill_bytes: int | None = 64 << 20
    spill_route: str | None = None

    def __post_init__(self) -> None:
        if self.output_bytes < MINIMUM_OUTPUT_BYTES:
            raise ValueError(
                f"output_bytes must be at least {MINIMUM_OUTPUT_BYTES}, got {self.output_bytes}"
            )
        if self.spill_bytes is not None and self.spill_bytes < 0:
            raise ValueError(f"spill_bytes must be at least 0, got {self.spill_bytes}")
