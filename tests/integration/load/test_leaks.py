"""1,000 executions and 100 session lifetimes leave a real ``lmc serve`` as they found it.

What it guards: every execution (Python, shell and JavaScript, ok and in
error, and some stopped by their timeout or by their client going away) and
every session's whole life (made, run once, deleted; shell-only ones, Python
ones from the pool, and shell ones through RemoteComputer over a WebSocket
with a file uploaded and downloaded) gives back what it took: the server's
descriptors and threads, processes (its tree, and any process naming its data
directory or its sessions' cgroups), temporary files (its own ``TMPDIR`` and
the data directory's ``sessions/``), mounts and cgroups. Counted before and
after with the same sessions open (the pool's, and a probe); the baseline
once the counts hold still (a new kernel's client sockets connect a moment
after it is ready), the end once every count is back at or below it, each
wait bounded.

Threads: AnyIO retires a worker thread only when another is handed work and
it has been idle for 10 s, so the wait keeps listing the probe's folder (one
worker thread at a time) until the idle ones are gone. The baseline, after
the warm-up, has the warm-up's idle workers alive: the end may only be at or
below it.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from itertools import cycle
from typing import Any

import anyio
import httpx
import pytest

from benchmarks.load.loadwire import MIXES, execute, load_client
from lmc_runtime.remote import RemoteComputer

from ..service.server import TOKEN, wait_for_pool
from .census import Served, settled, steady

LANGUAGES = ["python", "shell", "javascript"]
EXECUTIONS = 1000
RUNNERS = 4
CYCLES = 100
PYTHON_CYCLES = 10
#: Of every CYCLES // PYTHON_CYCLES lifetimes: one of Python, one through
#: RemoteComputer (WebSocket runs, files), the others shell.
_KINDS = {0: "python", 5: "remote"}
CYCLERS = 3
#: A run of each language is stopped after every this many executions of a runner.
STOP_EVERY = 50
#: Runs that last until they are stopped; each prints "started" first.
LONG = {
    "python": "import time\nprint('started', flush=True)\ntime.sleep(60)",
    "shell": "echo started; sleep 60",
    "javascript": "console.log('started'); await new Promise(r => setTimeout(r, 60000))",
}
#: How long the counts may take to go back (idle worker threads need 10 s).
SETTLE = 45.0


class Work:
    """The client, and what went wrong (every status not the expected one)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.problems: list[str] = []
        self.executions = 0
        self.cycles = 0

    async def run(self, session_id: str, language: str, code: str, expected: str) -> None:
        _, status = await execute(self.client, session_id, code, language)
        self.executions += 1
        if status != expected:
            self.problems.append(f"{language} {code!r}: {status!r}, not {expected!r}")

    async def time_out(self, session_id: str, language: str) -> None:
        """A run stopped by its timeout (the stop ladder)."""
        _, status = await execute(self.client, session_id, LONG[language], language, timeout=0.5)
        if status != "timeout":
            self.problems.append(f"{language}: a run past its timeout ended {status!r}")

    async def abandon(self, session_id: str, language: str) -> None:
        """A run whose client goes away once it has started, then waits (bounded)
        until the session has stopped it and is idle again."""
        body = {"role": "assistant", "type": "code", "format": language, "content": LONG[language]}
        url = f"/v1/sessions/{session_id}/execute"
        async with self.client.stream("POST", url, json=body) as resp:
            async for line in resp.aiter_lines():
                if '"started' in line:
                    break
        with anyio.fail_after(30):
            while (await self.client.get(f"/v1/sessions/{session_id}")).json()["state"] != "idle":
                await anyio.sleep(0.05)

    async def create(self, languages: list[str]) -> str:
        created = await self.client.post("/v1/sessions", json={"languages": languages})
        assert created.status_code == 201, created.text
        return str(created.json()["id"])

    async def delete(self, session_id: str) -> None:
        deleted = await self.client.delete(f"/v1/sessions/{session_id}")
        assert deleted.status_code == 204, deleted.text


async def _runner(work: Work, count: int) -> None:
    """One session of every language; ``count`` executions of the mixes in turn,
    and after every ``STOP_EVERY`` of them, a run stopped in each language: by
    its timeout, or by its client going away."""
    session_id = await work.create(LANGUAGES)
    steps = cycle(
        (language, code, expected) for language in LANGUAGES for code, expected in MIXES[language]
    )
    for done in range(1, count + 1):
        await work.run(session_id, *next(steps))
        if done % STOP_EVERY == 0:
            for language in LANGUAGES:
                stop = work.time_out if done // STOP_EVERY % 2 else work.abandon
                await stop(session_id, language)
    await work.delete(session_id)


async def _cycler(work: Work, kinds: list[str]) -> None:
    """Sessions made, run once and deleted, one after the other; a ``remote``
    one through RemoteComputer over a WebSocket, with a file up and down."""
    for kind in kinds:
        if kind == "remote":
            await _remote(work)
        else:
            session_id = await work.create([kind])
            code, expected = MIXES[kind][0]
            await work.run(session_id, kind, code, expected)
            await work.delete(session_id)
        work.cycles += 1


async def _remote(work: Work) -> None:
    url = str(work.client.base_url)
    remote = RemoteComputer(url, token=TOKEN, languages=["shell"], transport="websocket")
    async with remote:
        await remote.aupload("in.txt", b"hello\n")
        async with contextlib.aclosing(
            remote.arun("shell", "tr a-z A-Z < in.txt > out.txt")
        ) as out:
            final = [message async for message in out][-1]
        work.executions += 1
        if (final.extras or {}).get("status") != "ok" or await remote.adownload(
            "out.txt"
        ) != b"HELLO\n":
            work.problems.append(f"remote: {final}")


async def _load(url: str) -> Work:
    # The Python ones spread out: each takes the pool's session, which refills meanwhile.
    kinds = [_KINDS.get(i % (CYCLES // PYTHON_CYCLES), "shell") for i in range(CYCLES)]
    async with load_client(url, TOKEN, 16) as client:
        work = Work(client)
        with anyio.fail_after(300):
            async with anyio.create_task_group() as tg:
                for _ in range(RUNNERS):
                    tg.start_soon(_runner, work, EXECUTIONS // RUNNERS)
                for index in range(CYCLERS):
                    tg.start_soon(_cycler, work, kinds[index::CYCLERS])
    return work


async def _warm_up(url: str) -> None:
    """Every interpreter and both kinds of session once, so that what is made
    once for good (imports, caches) is in the baseline."""
    async with load_client(url, TOKEN, 4) as client:
        work = Work(client)
        await _runner(work, STOP_EVERY * 2)
        await _cycler(work, ["shell", "python", "remote"])
        assert work.problems == []


@pytest.mark.timeout(300)
def test_executions_and_session_lifetimes_leave_no_descriptor_thread_process_file_mount_or_cgroup(
    serve: Callable[..., AbstractContextManager[Served]],
) -> None:
    pool = ("--pool-size", "1", "--pool-max", "1")
    with serve(*pool, "--max-sessions", str(RUNNERS + CYCLERS + 4)) as served:
        server = served.server
        wait_for_pool(server, 1)
        probe = server.create(languages=["shell"])
        server.execute(probe, "echo up", language="shell")  # its shell runs throughout
        anyio.run(_warm_up, server.url)
        wait_for_pool(server, 1)
        baseline = steady(served)
        running = served.processes()

        work = anyio.run(_load, server.url)
        assert work.problems == [], work.problems[:5]
        assert work.executions == EXECUTIONS + CYCLES
        assert work.cycles == CYCLES

        wait_for_pool(server, 1)

        with server.client() as client:

            def poke() -> None:  # a worker thread lists the probe's folder
                assert client.get(f"/v1/sessions/{probe}/list").status_code == 200

            after = settled(served, baseline, SETTLE, poke=poke)
        now = served.processes()
        report: dict[str, Any] = {
            "before": baseline.to_dict(),
            "after": after.to_dict(),
            "processes gone": sorted((Counter(running) - Counter(now)).elements()),
            "processes new": sorted((Counter(now) - Counter(running)).elements()),
            "server warnings": served.warnings()[-20:],
        }
        assert after.cgroups == baseline.cgroups > 0, report
        assert after.processes == baseline.processes > 0, report
