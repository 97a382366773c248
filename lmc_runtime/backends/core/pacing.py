"""Which line numbers become ``active_line`` messages, and when.

Once the code has been away from the last reported line for ``dwell`` seconds,
and ``interval`` seconds after the last report, the line current then is
reported (never twice in a row); both 0 report every change.
"""

from __future__ import annotations

__all__ = ["DWELL", "LinePacer"]

#: How long a line must stay current before it is reported (seconds).
DWELL = 0.02


class LinePacer:
    """Decides which line numbers become ``active_line`` messages, and when."""

    def __init__(self, dwell: float = DWELL, interval: float = 0.0) -> None:
        self.dwell = dwell
        self.interval = interval
        self._shown_at = float("-inf")
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
        return max(self._since + self.dwell, self._shown_at + self.interval)

    def take(self, now: float) -> int | None:
        """The line to report at ``now``, if one is due; it is then marked reported."""
        due = self.due_at()
        if due is None or now < due:
            return None
        self._reported, self._since, self._shown_at = self.current, None, now
        return self.current
