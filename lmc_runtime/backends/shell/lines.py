"""The active-line side channel: records from the shell's DEBUG trap, and their pacing.

The trap writes ``"RUN LINE\\n"`` to a pipe of its own (never to the PTY), only
when the line changes and only for commands of the cell file being run, so the
user's code is executed unchanged. ``RUN`` tells this execution's reports
from those of a background subshell an earlier cell left behind.

:class:`LinePacer` turns the raw records into reports the way the Python
backend does: once the code has been away from the last reported line
for ``dwell`` seconds, the line current then is reported (so at most
``1 / dwell`` reports a second, and a tight loop over short lines is still
seen); fast code reports nothing, and no line is reported twice in a row.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LinePacer", "LineRecord", "parse_records"]

#: How long a line must stay current before it is reported (seconds).
DWELL = 0.02


@dataclass(frozen=True)
class LineRecord:
    """One report from the trap: cell ``run`` is at 1-based ``line``."""

    run: int
    line: int


def parse_records(buffer: bytes) -> tuple[list[LineRecord], bytes]:
    """Complete records in ``buffer``, and the incomplete rest to keep."""
    *complete, rest = buffer.split(b"\n")
    records = []
    for raw in complete:
        fields = raw.split()
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
            line = int(fields[1])
            if line >= 1:
                records.append(LineRecord(int(fields[0]), line))
    return records, rest


class LinePacer:
    """Decides which line numbers become ``active_line`` messages, and when."""

    def __init__(self, dwell: float = DWELL) -> None:
        self.dwell = dwell
        self.current: int | None = None
        #: When the code first left the last reported line (None: it has not).
        self._since: float | None = None
        self._reported: int | None = None

    def see(self, line: int, now: float) -> None:
        """The code moved to ``line`` at time ``now``."""
        self.current = line
        if line != self._reported and self._since is None:
            self._since = now

    def due_at(self) -> float | None:
        """When the current line becomes reportable, or None if there is nothing to report."""
        if self._since is None or self.current == self._reported:
            return None
        return self._since + self.dwell

    def take(self, now: float) -> int | None:
        """The line to report at ``now``, if one is due; it is then marked reported."""
        due = self.due_at()
        if due is None or now < due:
            return None
        self._reported, self._since = self.current, None
        return self.current

    @property
    def last_reported(self) -> int | None:
        return self._reported
