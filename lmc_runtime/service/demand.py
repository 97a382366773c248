"""How many warm sessions the recent arrivals of session creations call for.

The pool refills at ``parallel`` starts at a time, each taking about the
measured start time, so it can hand out ``parallel / start_seconds`` sessions a
second on its own. Creations that arrive faster than that pile up: a
*backlog* that grows by one at each creation and drains at that rate (a leaky
bucket). A burst of 50 creations at once leaves a backlog of 50; one creation a
second leaves less than one. The pool's target is the highest backlog seen
within the last ``cooldown`` seconds, between ``floor`` and ``ceiling``: it
grows as soon as a burst is seen, holds while bursts keep coming, and falls
back once none has come for ``cooldown`` seconds.

Pure and clock-free: every method takes the time (``anyio.current_time()`` in
the service, any number in tests).
"""

from __future__ import annotations

import math
from collections import deque

__all__ = ["Demand"]

#: The start time assumed before any start was measured, in seconds.
_FIRST_GUESS = 1.0
#: How much the latest measured start moves the average (exponential smoothing).
_SMOOTHING = 0.3
#: Start times are taken to be at least this long (a clock's glitch is not a rate).
_SHORTEST_START = 0.01


class Demand:
    """The pool size recent creations call for (see the module's docstring)."""

    def __init__(self, floor: int, ceiling: int, *, parallel: int, cooldown: float) -> None:
        if not 0 <= floor <= ceiling:
            raise ValueError(f"need 0 <= floor <= ceiling, got {floor} and {ceiling}")
        if parallel < 1 or cooldown < 0:
            raise ValueError(f"need parallel >= 1 and cooldown >= 0, got {parallel}, {cooldown}")
        self.floor = floor
        self.ceiling = ceiling
        self.parallel = parallel
        self.cooldown = cooldown
        #: The smoothed time one session takes to start, in seconds.
        self.start_seconds = _FIRST_GUESS
        self._backlog = 0.0
        self._last: float | None = None
        #: (time, backlog) of past peaks, newest last, backlogs decreasing from
        #: the oldest: the highest backlog of the window is always the first.
        self._peaks: deque[tuple[float, float]] = deque()

    @property
    def refill_rate(self) -> float:
        """Sessions a second the pool starts on its own."""
        return self.parallel / self.start_seconds

    def started(self, seconds: float) -> None:
        """One session took ``seconds`` to start."""
        seconds = max(seconds, _SHORTEST_START)
        self.start_seconds += _SMOOTHING * (seconds - self.start_seconds)

    def backlog(self, now: float) -> float:
        """The backlog at ``now``: creations the pool could not have refilled yet."""
        if self._last is None:
            return 0.0
        drained = max(0.0, now - self._last) * self.refill_rate
        return max(0.0, self._backlog - drained)

    def arrived(self, now: float) -> None:
        """A session was asked for at ``now``."""
        level = self.backlog(now) + 1.0
        self._backlog, self._last = level, now
        while self._peaks and self._peaks[-1][1] <= level:
            self._peaks.pop()
        self._peaks.append((now, level))

    def target(self, now: float) -> int:
        """How many warm sessions the pool should hold at ``now``."""
        self._forget(now)
        peak = self._peaks[0][1] if self._peaks else 0.0
        return max(self.floor, min(self.ceiling, math.ceil(peak - 1e-9)))

    def falls_at(self, now: float) -> float | None:
        """When the target may next fall (the highest peak leaves the window);
        None when it is at the floor already."""
        self._forget(now)
        if not self._peaks or self.target(now) <= self.floor:
            return None
        return self._peaks[0][0] + self.cooldown

    def _forget(self, now: float) -> None:
        while self._peaks and self._peaks[0][0] + self.cooldown <= now:
            self._peaks.popleft()
