"""A timed load of mixed languages on one ``lmc serve``, with its host footprint.

N sessions, each created with every language of the mix, run the load test's
short executions in turn (a Python one, then a shell one, then a JavaScript
one, ...) until ``duration`` seconds have passed, and are then deleted. When
the server runs on this host (its pid is known), a :class:`~.census.Census`
of it is taken before the sessions are made (once its counts hold still),
every ``sample_every`` seconds during the load (the last one before any
session is deleted), and after the sessions are deleted, once the processes and
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

import anyio
import httpx
import psutil

from .census import Census, CensusTarget, take_census
from .loadreport import MixReport, Sample
from .loadwire import MIXES, load_client, tallied

__all__ = ["MixReport", "Sample", "pool_ready", "run_mixed"]

#: How long the processes and descriptors may take to go back after the deletes.
SETTLE_BOUND = 60.0
#: How often they are counted meanwhile.
SETTLE_EVERY = 0.25
#: Counts this far apart that agree are taken as steady (the start's).
STEADY_GAP = 0.5


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
            step = items[index % len(items)]
            index += 1
            if not await tallied(report, client, session_id, step):
                continue
            seen.add(step[0])
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


async def _steady(load: _Load) -> Census | None:
    """The census once two counts :data:`STEADY_GAP` apart agree (a kernel's
    client sockets connect a moment after it is ready), or the last after
    :data:`SETTLE_BOUND` seconds."""
    census = await load.census()
    with anyio.move_on_after(SETTLE_BOUND):
        while census is not None:
            await anyio.sleep(STEADY_GAP)
            again = await load.census()
            if again is None or _counts(again) == _counts(census):
                break
            census = again
    return census


def _counts(census: Census) -> dict[str, int]:
    return {name: value for name, value in census.to_dict().items() if name != "rss_bytes"}


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
        report.start = await _steady(load)
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
