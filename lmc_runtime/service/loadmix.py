"""A timed load of mixed languages on one ``lmc serve``, with its host footprint.

N sessions, each created with every language of the mix, run the load test's
short executions in turn (a Python one, then a shell one, then a JavaScript
one, ...) until ``duration`` seconds have passed, and are then deleted. When
the server runs on this host (its pid is known), a :class:`~.census.Census`
of it is taken before the sessions are made, every ``sample_every`` seconds
during the load, and after the sessions are deleted, once the processes and
descriptors are back at their level at the start (or a bound has passed).

Reported: executions, errors (an unexpected status, an HTTP error, a stream
that does not end with its final message), latency p50 and p99, the server
tree's RSS at the start, after warm-up (every session has run each language
once, so every interpreter has started, and the pool holds as many warm
sessions as at the start), in the middle of the load and at its end
(flat: the end at most ``flat_percent`` above the warm-up value), and the
processes and descriptors at the start and after the sessions are deleted.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import psutil

from .census import Census, CensusTarget, take_census
from .loadwire import MIXES, execute, load_client, ms, percentile

__all__ = ["MixReport", "Sample", "pool_ready", "run_mixed", "server_pid"]

#: How long the processes and descriptors may take to go back after the deletes.
SETTLE_BOUND = 60.0
#: How often they are counted meanwhile.
SETTLE_EVERY = 0.25


@dataclass(frozen=True)
class Sample:
    """The server tree at one moment of the load (seconds since it began)."""

    at: float
    census: Census


@dataclass
class MixReport:
    """What one timed mixed load measured."""

    sessions: int
    languages: list[str]
    duration: float
    flat_percent: float
    executions: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    start: Census | None = None
    warm: Sample | None = None
    after: Census | None = None

    def _middle(self) -> Sample | None:
        if not self.samples:
            return None
        return min(self.samples, key=lambda sample: abs(sample.at - self.duration / 2))

    @property
    def rss_growth_percent(self) -> float | None:
        """How far the RSS at the end of the load is above the value after warm-up."""
        if self.warm is None or not self.samples or not self.warm.census.rss_bytes:
            return None
        end = self.samples[-1].census.rss_bytes
        return (end / self.warm.census.rss_bytes - 1) * 100

    @property
    def flat(self) -> bool | None:
        growth = self.rss_growth_percent
        return None if growth is None else growth <= self.flat_percent

    def leaked(self) -> dict[str, tuple[int, int]]:
        """Processes or descriptors more after the deletes than at the start."""
        if self.start is None or self.after is None:
            return {}
        above = self.after.above(self.start)
        return {name: above[name] for name in ("processes", "fds") if name in above}

    def to_dict(self) -> dict[str, Any]:
        middle = self._middle()
        growth = self.rss_growth_percent
        return {
            "sessions": self.sessions,
            "languages": self.languages,
            "duration_s": self.duration,
            "executions": self.executions,
            "errors": len(self.errors),
            "error_samples": self.errors[:5],
            "p50_ms": ms(percentile(self.latencies, 50)),
            "p99_ms": ms(percentile(self.latencies, 99)),
            "rss_mib": {
                "start": _mib(self.start),
                "warm": _mib(self.warm.census if self.warm else None),
                "warm_at_s": round(self.warm.at, 1) if self.warm else None,
                "middle": _mib(middle.census if middle else None),
                "end": _mib(self.samples[-1].census if self.samples else None),
            },
            "rss_growth_percent": None if growth is None else round(growth, 1),
            "flat": self.flat,
            "flat_percent": self.flat_percent,
            "start": self.start.to_dict() if self.start else None,
            "after_delete": self.after.to_dict() if self.after else None,
            "leaked": {name: list(counts) for name, counts in self.leaked().items()},
        }


def _mib(census: Census | None) -> float | None:
    return None if census is None else round(census.rss_bytes / 2**20, 1)


def server_pid(port: int) -> int | None:
    """The pid of the process listening on TCP ``port`` here, if any."""
    for conn in psutil.net_connections(kind="tcp"):
        listening = conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port
        if listening and conn.pid is not None:
            return conn.pid
    return None


class _Load:
    """The shared state of one run: its report, its clock and the warm-up count."""

    def __init__(self, report: MixReport, target: CensusTarget | None) -> None:
        self.report = report
        self.target = target
        self.began = time.monotonic()
        self.deadline = self.began + report.duration
        self.waiting_warm = report.sessions
        self.all_warm = anyio.Event()
        #: Set once the last sample under load is taken: sessions are deleted after it.
        self.sampled = anyio.Event()
        #: Warm sessions in the pool at the start (None: unknown).
        self.pool_start: int | None = None

    async def census(self) -> Census | None:
        if self.target is None:
            return None
        return await anyio.to_thread.run_sync(take_census, self.target)

    async def sample(self) -> Sample | None:
        census = await self.census()
        if census is None:
            return None
        return Sample(round(time.monotonic() - self.began, 3), census)

    def warmed(self) -> None:
        """One session has run every language of the mix once."""
        self.waiting_warm -= 1
        if self.waiting_warm <= 0:
            self.all_warm.set()


async def _session(client: httpx.AsyncClient, load: _Load) -> None:
    """One session: created with every language, runs the mix until the deadline."""
    report = load.report
    items = [
        (language, code, expected)
        for round_ in zip(*(MIXES[language] for language in report.languages), strict=False)
        for language, (code, expected) in zip(report.languages, round_, strict=True)
    ]
    session_id: str | None = None
    warm = False
    try:
        created = await client.post("/v1/sessions", json={"languages": report.languages})
        if created.status_code != 201:
            report.errors.append(f"create: {created.status_code} {created.text[:200]}")
            return
        session_id = str(created.json()["id"])
        seen: set[str] = set()
        index = 0
        while time.monotonic() < load.deadline:
            language, code, expected = items[index % len(items)]
            index += 1
            try:
                elapsed, status = await execute(client, session_id, code, language)
            except (httpx.HTTPError, RuntimeError, ValueError) as exc:
                report.errors.append(f"execute {language}: {exc!r}")
                continue
            report.executions += 1
            report.latencies.append(elapsed)
            if status != expected:
                report.errors.append(f"{language}: status {status!r}, not {expected!r}: {code!r}")
            seen.add(language)
            if not warm and len(seen) == len(report.languages):
                warm = True
                load.warmed()
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        report.errors.append(f"session: {exc!r}")
    finally:
        if not warm:
            load.warmed()  # counted once, whatever happened, so no one waits forever
        if session_id is not None:
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(SETTLE_BOUND):
                    await load.sampled.wait()
                await _delete(client, report, session_id)


async def _delete(client: httpx.AsyncClient, report: MixReport, session_id: str) -> None:
    try:
        deleted = await client.delete(f"/v1/sessions/{session_id}")
    except httpx.HTTPError as exc:
        report.errors.append(f"delete: {exc!r}")
        return
    if deleted.status_code != 204:
        report.errors.append(f"delete: {deleted.status_code} {deleted.text[:200]}")


async def pool_ready(client: httpx.AsyncClient) -> int | None:
    """How many warm sessions the server's pool holds now (None: unknown)."""
    try:
        return int((await client.get("/healthz")).json()["pool_ready"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None


async def _warmed_up(client: httpx.AsyncClient, load: _Load) -> bool:
    """Every session has run each language and the pool is refilled."""
    if not load.all_warm.is_set():
        return False
    ready = await pool_ready(client)
    return load.pool_start is None or ready is None or ready >= load.pool_start


async def _sampler(client: httpx.AsyncClient, load: _Load, every: float) -> None:
    """Count the server tree every ``every`` seconds until the deadline, and once
    at it; the first count after warm-up is the warm one."""
    try:
        while True:
            sample = await load.sample()
            if sample is None:
                return
            load.report.samples.append(sample)
            if load.report.warm is None and await _warmed_up(client, load):
                load.report.warm = sample
            left = load.deadline - time.monotonic()
            if left <= 0:
                return
            await anyio.sleep(min(every, left))  # the sampling period, not a wait for a state
    finally:
        load.sampled.set()


async def _settled(load: _Load) -> Census | None:
    """The census once processes and descriptors are back at their level at the
    start, or the last one counted after :data:`SETTLE_BOUND` seconds."""
    start = load.report.start
    census = await load.census()
    with anyio.move_on_after(SETTLE_BOUND):
        while census is not None and start is not None:
            if census.processes <= start.processes and census.fds <= start.fds:
                break
            await anyio.sleep(SETTLE_EVERY)
            census = await load.census()
    return census


async def run_mixed(
    url: str,
    token: str | None,
    sessions: int,
    duration: float,
    languages: list[str],
    *,
    target: CensusTarget | None = None,
    flat_percent: float = 10.0,
    sample_every: float = 2.0,
) -> MixReport:
    """Run ``sessions`` sessions of ``languages`` against ``url`` for ``duration``
    seconds; ``target``: the server to count (None: it is not on this host)."""
    report = MixReport(sessions, list(languages), duration, flat_percent)
    load = _Load(report, target)
    async with load_client(url, token, sessions * 2 + 4) as client:
        load.pool_start = await pool_ready(client)
        report.start = await load.census()
        load.began = time.monotonic()
        load.deadline = load.began + duration
        with anyio.fail_after(duration + 600):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_sampler, client, load, sample_every)
                for _ in range(sessions):
                    tg.start_soon(_session, client, load)
    with contextlib.suppress(psutil.NoSuchProcess):
        report.after = await _settled(load)
    return report
