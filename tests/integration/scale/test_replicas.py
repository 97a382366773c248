"""Three ``lmc serve`` replicas behind HAProxy (``examples/deploy/haproxy.cfg``):
sessions spread over them and stay on theirs; a replica that dies loses its
sessions (410 ``session_lost``, ``RemoteSessionLost``), and only those; a
replica restarted under its name says the same of its old ids."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import anyio
import pytest

from lmc_runtime import Message
from lmc_runtime.errors import ConnectionLost, RemoteSessionLost, RemoteUnavailable
from lmc_runtime.remote import RemoteComputer

from ...postgres_cluster import PostgresCluster, session_cluster
from ..service.server import TOKEN
from .cluster import Cluster, running_cluster

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("_haproxy_and_bwrap")]

NAMES = ["r1", "r2", "r3"]
GUARD = 60.0


@pytest.fixture(scope="module")
def store(request: pytest.FixtureRequest) -> str | None:
    """A PostgreSQL schema every replica keeps its transcripts in (None where no
    PostgreSQL cluster can be made here: then each keeps its Jan folder)."""
    if PostgresCluster.unavailable() is not None:
        return None
    return session_cluster(request).create_schema()


@pytest.fixture(scope="module")
def cluster(store: str | None) -> Iterator[Cluster]:
    """Three replicas of at most 14 shell sessions each, behind HAProxy.

    Without the sandbox: these tests are about routing and losing sessions, and
    sandboxed sessions take twice as long to make and end on this 2-core
    machine (the sandbox has tests of its own)."""
    args = ("--pool-size", "0", "--max-sessions", "14", "--no-sandbox")
    with running_cluster(NAMES, *args, store=store) as running:
        yield running


def _open(cluster: Cluster, **kwargs: object) -> RemoteComputer:
    return RemoteComputer(cluster.url, token=TOKEN, languages=["shell"], **kwargs)  # type: ignore[arg-type]


async def _output(computer: RemoteComputer, code: str) -> tuple[str, object]:
    messages: list[Message] = [m async for m in computer.arun("shell", code, timeout=GUARD)]
    text = "".join(m.content for m in messages if m.format == "output")
    return text, (messages[-1].extras or {}).get("status")


async def _close(computers: list[RemoteComputer]) -> None:
    with anyio.CancelScope(shield=True), anyio.fail_after(GUARD):
        async with anyio.create_task_group() as tg:
            for computer in computers:
                tg.start_soon(computer.aclose)


def _replica(computer: RemoteComputer) -> str:
    session_id = computer.session_id
    assert session_id is not None
    return session_id.rsplit("-", 1)[0]


async def test_thirty_sessions_spread_over_every_replica_and_stay_on_theirs(
    cluster: Cluster,
) -> None:
    computers = [_open(cluster) for _ in range(30)]
    async with anyio.create_task_group() as tg:
        for computer in computers:
            tg.start_soon(computer.__aenter__)
    try:
        held = Counter(_replica(c) for c in computers)
        assert set(held) == set(NAMES) and sum(held.values()) == 30, held
        assert min(held.values()) >= 5, held  # least connections spreads them
        for name in NAMES:  # each replica holds exactly the ids that name it
            mine = {c.session_id for c in computers if _replica(c) == name}
            assert cluster.replica(name).session_ids() == mine

        async def check(index: int, computer: RemoteComputer) -> None:
            assert await _output(computer, f"N={index}; echo set") == ("set\n", "ok")
            assert await _output(computer, "echo n=$N") == (f"n={index}\n", "ok")

        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as tg:
                for index, computer in enumerate(computers):
                    tg.start_soon(check, index, computer)
    finally:
        await _close(computers)
    for name in NAMES:
        assert cluster.replica(name).session_ids() == set()


async def _on_each_replica(
    cluster: Cluster, per_replica: int, **kwargs: object
) -> list[RemoteComputer]:
    """Sessions opened through the balancer until every replica holds
    ``per_replica`` of them (the rest are closed)."""
    kept: list[RemoteComputer] = []
    for _ in range(per_replica * len(NAMES) * 4):
        if all(sum(_replica(c) == n for c in kept) >= per_replica for n in NAMES):
            return kept
        computer = _open(cluster, **kwargs)
        await computer.__aenter__()
        if sum(_replica(c) == _replica(computer) for c in kept) < per_replica:
            kept.append(computer)
        else:
            await computer.aclose()
    raise AssertionError(
        f"the balancer did not reach every replica: {Counter(map(_replica, kept))}"
    )


async def _lost(computer: RemoteComputer) -> RemoteSessionLost:
    """The RemoteSessionLost of the computer's next call, once HAProxy has seen its
    replica go (until then a call may get 503 unavailable, never anything else)."""
    with anyio.fail_after(GUARD):
        while True:
            try:
                await _output(computer, "echo still here")
            except RemoteSessionLost as lost:
                return lost
            except RemoteUnavailable:
                await anyio.sleep(0.05)
            else:
                raise AssertionError(f"session {computer.session_id} still runs")


async def _kill_during_runs(
    cluster: Cluster, name: str, doomed: list[RemoteComputer]
) -> list[RemoteComputer]:
    """Kill replica ``name`` while a run streams from it over each transport:
    both runs break with ConnectionLost. The sessions whose run was cut."""
    running = [next(c for c in doomed if c.transport == t) for t in ("http", "websocket")]
    broken: list[BaseException] = []

    async def long_run(computer: RemoteComputer, started: anyio.Event) -> None:
        try:
            async for message in computer.arun("shell", "echo started; sleep 50", timeout=GUARD):
                if message.content == "started\n":
                    started.set()
        except ConnectionLost as exc:
            broken.append(exc)

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as tg:
            for computer in running:
                started = anyio.Event()
                tg.start_soon(long_run, computer, started)
                await started.wait()
            cluster.replica(name).kill()
    assert len(broken) == 2, broken
    return running


def _check_transcripts(
    cluster: Cluster,
    everyone: list[RemoteComputer],
    doomed: list[RemoteComputer],
    cut: list[RemoteComputer],
) -> None:
    """Every transcript holds every run that ended, the lost sessions' too, and the
    code of each run a replica died in (written ahead), with no final message yet."""
    for computer in everyone:
        with cluster.replica(_replica(computer)).transcripts() as transcripts:
            stored = transcripts.messages(str(computer.session_id))
        codes = [m.content for m in stored if m.role == "assistant"]
        finals = [m for m in stored if m.format == "active_line" and m.content is None]
        runs = 1 if computer in doomed else 2  # "K=...", then "echo $K" if it lived
        assert codes[0].startswith("K=") and len(finals) == runs
        if computer in cut:
            assert len(codes) == runs + 1 and codes[-1] == "echo started; sleep 50", codes
        else:
            assert len(codes) == runs, codes


async def test_a_killed_replica_loses_its_sessions_and_only_those(cluster: Cluster) -> None:
    """Regression: the sessions of a replica that died must answer 410
    session_lost through the balancer (the others keep their state), and after
    the replica restarts under its name, its old ids too."""
    for backend in ("replicas", "sessions"):
        cluster.wait_states(backend, **dict.fromkeys(NAMES, "UP"))
    http = await _on_each_replica(cluster, 2)
    ws = await _on_each_replica(cluster, 1, transport="websocket")
    everyone = http + ws
    try:
        for index, computer in enumerate(everyone):
            assert await _output(computer, f"K={index}; echo $K") == (f"{index}\n", "ok")
        doomed = [c for c in everyone if _replica(c) == "r2"]
        cut = await _kill_during_runs(cluster, "r2", doomed)
        for _ in range(3):  # new sessions land on the others at once (retried there)
            async with _open(cluster) as fresh:
                assert _replica(fresh) in ("r1", "r3")

        for computer in doomed:
            lost = await _lost(computer)
            assert (lost.status, lost.code) == (410, "session_lost")
            assert lost.message == f"session {computer.session_id} was lost: replica r2 is down"
        cluster.wait_states("sessions", r1="UP", r2="DOWN", r3="UP")
        for index, computer in enumerate(everyone):
            if computer not in doomed:
                assert await _output(computer, "echo $K") == (f"{index}\n", "ok")

        _check_transcripts(cluster, everyone, doomed, cut)

        cluster.replica("r2").start()  # the same name, port and data directory
        cluster.wait_states("sessions", r2="UP")
        for computer in doomed:
            lost = await _lost(computer)
            assert lost.status == 410 and "replica r2 stopped without a shutdown" in lost.message
        never = RemoteComputer.attach(cluster.url, "r2-0123456789abcdef", token=TOKEN)
        with pytest.raises(RemoteSessionLost, match="replica r2 restarted since it was created"):
            await never.__aenter__()
    finally:
        await _close(everyone)
