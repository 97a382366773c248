"""A server killed (SIGKILL) while code runs: the run's code message is in the
transcript, with its output so far, and the next start on the same data
directory ends the run with a final message of status ``server_lost``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lmc_runtime.messages import Message
from lmc_runtime.sandbox import sandbox_available
from lmc_runtime.store import JanThreadStore, PostgresThreadStore, ThreadStore

from ...postgres_cluster import PostgresCluster, session_cluster
from ..service.server import CODE, Server, _running

pytestmark = pytest.mark.integration

SLOW = "import time; print('x', flush=True); time.sleep(60)"

#: Every wait in these tests ends within this many seconds.
BOUND = 30.0


@pytest.fixture(params=["jan", "jan-run-sync", "postgres"])
def store_args(request: pytest.FixtureRequest) -> Iterator[tuple[str, ...]]:
    """The ``lmc serve`` arguments of each transcript store the service has."""
    if request.param == "postgres":
        cluster: PostgresCluster = session_cluster(request)
        yield ("--store", cluster.create_schema())
    elif request.param == "jan-run-sync":
        yield ("--transcript-sync", "run")
    else:
        yield ()


def _store(args: tuple[str, ...], data_dir: Path) -> ThreadStore:
    if "--store" in args:
        return PostgresThreadStore(args[args.index("--store") + 1])
    return JanThreadStore(data_dir)


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {BOUND} s"
        time.sleep(0.05)


@contextlib.contextmanager
def _slow_run(server: Server, session_id: str) -> Iterator[None]:
    """Send :data:`SLOW` and read its stream until its output arrived; the stream
    stays open in the block (a client that leaves ends its run)."""
    body = {**CODE, "content": SLOW}
    with (
        server.client() as client,
        client.stream("POST", f"/v1/sessions/{session_id}/execute", json=body) as response,
    ):
        assert response.status_code == 200
        lines = response.iter_lines()  # kept: a generator closed on the way closes the stream
        for line in lines:
            if line and json.loads(line).get("content") == "x\n":
                break
        else:
            raise AssertionError("the run ended without its output")
        yield


def _outputs(messages: list[Message]) -> str:
    return "".join(str(m.content) for m in messages if m.format == "output")


def test_the_code_of_a_run_in_flight_survives_a_killed_server_and_ends_server_lost(
    store_args: tuple[str, ...],
) -> None:
    """Guards the audit trail: a run's code message (and the output sent) was
    written only with its final message, so SIGKILL mid-run lost the code."""
    availability = sandbox_available()
    assert availability.available, f"lmc serve needs bubblewrap: {availability.reason}"
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)  # sandbox users pass through to their session folders
        data_dir = Path(tmp) / "data"
        args = ("--pool-size", "0", *store_args)
        with _running(data_dir, args, "test-token-0123456789") as first:
            session_id = first.create()
            store = _store(store_args, data_dir)
            with _slow_run(first, session_id), contextlib.closing(store):
                # Written behind, within moments: the test waits for it, bounded.
                _wait(lambda: "x\n" in _outputs(store.messages(session_id)), "output stored")
                first.process.send_signal(signal.SIGKILL)
                first.process.wait(timeout=BOUND)
                kept = store.messages(session_id)
                assert [m.content for m in kept if m.type == "code"] == [SLOW]
                assert not any(m.is_final for m in kept), kept
        with _running(data_dir, args, "test-token-0123456789") as second:
            store = _store(store_args, data_dir)
            try:
                kept = store.messages(session_id)
            finally:
                store.close()
            code = kept[0]
            assert (code.type, code.content) == ("code", SLOW)
            assert _outputs(kept) == "x\n"
            final = kept[-1]
            assert final.is_final and final.in_reply_to == code.id, kept
            assert final.status == "server_lost" and final.extras is not None
            assert final.extras["state_lost"] is True
            assert sum(1 for m in kept if m.is_final) == 1
            assert "server_lost" in second.log()
