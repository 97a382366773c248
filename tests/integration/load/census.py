"""Counting what a test's ``lmc serve`` holds, and waiting for it to go back.

:class:`~benchmarks.load.census.Census` counts; this adds the test's
server (its replica name picks its sessions' cgroups out of the host's; its
own ``TMPDIR`` holds only its temporary files) and a bounded wait until every
count is back at or below a baseline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.load.census import Census, CensusTarget, describe_processes, take_census

from ..service.server import Server

__all__ = ["Served", "settled", "steady"]

#: How often the counts are read while they settle.
_EVERY = 0.2
#: Counts this far apart that agree are steady.
_STEADY_GAP = 0.5


@dataclass(frozen=True)
class Served:
    """A running test server, its replica name and its temporary folder."""

    server: Server
    replica: str
    temp: Path

    @property
    def target(self) -> CensusTarget:
        return CensusTarget(
            self.server.process.pid,
            self.server.data_dir,
            temp_dirs=(self.temp,),
            cgroup_prefix=f"lmc-{self.replica}-",
        )

    def census(self) -> Census:
        return take_census(self.target)

    def processes(self) -> list[str]:
        """What its counted processes run (see :func:`describe_processes`)."""
        return describe_processes(self.target)

    def warnings(self) -> list[str]:
        """The lines the server logged at WARNING or above so far."""
        levels = ("WARNING", "ERROR", "CRITICAL")
        return [line for line in self.server.log().splitlines() if any(w in line for w in levels)]


def steady(served: Served, bound: float = 30) -> Census:
    """The census once two counts :data:`_STEADY_GAP` apart agree: a kernel's
    client sockets connect a moment after it is ready (a baseline taken in
    that moment would be one connection short)."""
    deadline = time.monotonic() + bound
    census = served.census()
    while True:
        time.sleep(_STEADY_GAP)
        again = served.census()
        if replace(again, rss_bytes=0) == replace(census, rss_bytes=0):
            return again
        assert time.monotonic() < deadline, f"the counts did not hold still for {bound} s"
        census = again


def settled(
    served: Served,
    baseline: Census,
    bound: float,
    *,
    poke: Callable[[], object] = lambda: None,
    ignored: tuple[str, ...] = (),
) -> Census:
    """The census once no count (but the ``ignored``) is above ``baseline``
    (processes end, the pool refills, idle worker threads retire); fails naming
    the counts still above after ``bound`` seconds. ``poke`` runs before each
    look (a request that hands the server's worker threads work, so that AnyIO
    retires the idle ones)."""
    deadline = time.monotonic() + bound
    while True:
        poke()
        census = served.census()
        above = {k: v for k, v in census.above(baseline).items() if k not in ignored}
        if not above:
            return census
        if time.monotonic() > deadline:
            counts = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in above.items())
            raise AssertionError(f"not back within {bound} s: {counts}; now {census}")
        time.sleep(_EVERY)
