"""``lmc serve`` killed with SIGKILL while its sessions run code, then started
again on the same data directory.

``tests/integration/service/test_stale.py`` covers a kill between runs (the
mounts and cgroups cleaned at the next start); here the kill lands in the
middle of runs, over HTTP and a WebSocket at once.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import psutil
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from lmc_runtime.sandbox.stale import clean_stale_sessions, mounts_under, stale_cgroups
from lmc_runtime.store import JanThreadStore

from ..service.server import TOKEN, Server, _running, final_status, output
from .clients import body, descendants_gone, reply, stream_until, ws_url
from .transcripts import stored_runs

ARGS = ("--pool-size", "0", "--max-sessions", "4")
TICKING = "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.05)"


def _ws_mid_run(server: Server, session_id: str, started: threading.Event, out: list[str]) -> None:
    """A WebSocket client whose run is cut by the kill: how its connection ended."""

    async def scenario() -> None:
        async with connect(ws_url(server, session_id)) as ws:
            await ws.send(json.dumps(body("echo started; sleep 300", "shell", id="w1")))
            while (await reply(ws))["content"] != "started\n":
                pass
            started.set()
            try:
                while True:
                    await reply(ws, within=60)
            except ConnectionClosed as exc:
                out.append(f"closed {exc.rcvd.code if exc.rcvd else 'abruptly'}")

    anyio.run(scenario)


def _kill_mid_run(server: Server, http_session: str, ws_session: str) -> list[int]:
    """Start a run on each session, SIGKILL the server while both run; its processes."""
    started = threading.Event()
    ended: list[str] = []
    ws_client = threading.Thread(target=_ws_mid_run, args=(server, ws_session, started, ended))
    ws_client.start()
    with server.client() as client:
        response, rest = stream_until(client, http_session, TICKING, "started")
        assert started.wait(60), "the WebSocket run did not start"
        children = psutil.Process(server.process.pid).children(recursive=True)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=30)
        try:
            for _ in rest:
                pass
            raise AssertionError("the stream of a killed server ended cleanly")
        except httpx.TransportError:
            pass  # broken, at once: not a hang
        finally:
            response.close()
    ws_client.join(60)
    assert not ws_client.is_alive() and ended, "the WebSocket client did not see the end"
    return [child.pid for child in children]


def _ws_refusal(server: Server, session_id: str) -> int:
    """The HTTP status that refuses a WebSocket to ``session_id``."""

    async def scenario() -> int:
        try:
            async with connect(ws_url(server, session_id)):
                pass
        except InvalidStatus as exc:
            return int(exc.response.status_code)
        raise AssertionError("a WebSocket to a lost session was accepted")

    return anyio.run(scenario)


@contextmanager
def _data_dir() -> Iterator[Path]:
    """A data directory, cleaned after the test like a restart would, whatever
    the test left in it (a killed server's mounts would keep it from going)."""
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)  # sandbox users pass through to their session folders
        data_dir = Path(tmp) / "data"
        try:
            yield data_dir
        finally:
            anyio.run(clean_stale_sessions, data_dir / "sessions")


def test_a_server_killed_mid_run_restarts_with_every_finished_run_and_its_sessions_lost() -> None:
    with _data_dir() as data_dir:
        with _running(data_dir, ARGS, TOKEN) as first:
            http_session = first.create()
            ws_session = first.create(languages=["shell"])
            finished = [f"print('run {n}')" for n in range(3)]
            for code in finished:
                assert final_status(first.execute(http_session, code)) == "ok"
            shell = first.execute(ws_session, "echo finished", language="shell")
            assert output(shell) == "finished\n"
            processes = _kill_mid_run(first, http_session, ws_session)
        # A sandbox lives no longer than its server: nothing it ran is left.
        assert processes and descendants_gone(processes) == []

        with _running(data_dir, ARGS, TOKEN) as second:
            for lost in (http_session, ws_session):
                with second.client() as client:
                    answer = client.get(f"/v1/sessions/{lost}")
                    run = client.post(f"/v1/sessions/{lost}/execute", json=body("print(1)"))
                for response in (answer, run):
                    assert response.status_code == 410, response.text
                    error = response.json()["error"]
                    assert error["code"] == "session_lost", error
                    assert "stopped without a shutdown" in error["message"], error
            assert _ws_refusal(second, ws_session) == 410
            sessions = data_dir / "sessions"
            assert mounts_under(sessions) == [] and not (sessions / http_session).exists()
            assert [g for s in (http_session, ws_session) for g in stale_cgroups(s)] == []
            # Every run that ended is stored whole, in order; the one cut short has
            # its code (written before it ran), its output as far as it was written
            # behind, and a final message given at this start (server_lost).
            store = JanThreadStore(data_dir)
            assert stored_runs(store, http_session) == [*finished, TICKING]
            assert stored_runs(store, ws_session) == ["echo finished", "echo started; sleep 300"]
            for lost in (http_session, ws_session):
                last = store.messages(lost)[-1]
                assert last.is_final and last.status == "server_lost", last
            outputs = [m.content for m in store.messages(http_session) if m.format == "output"]
            assert outputs[:3] == [f"run {n}\n" for n in range(3)], outputs
            assert outputs[3:] in ([], ["started\n"]), outputs
            store.close()
            fresh = second.create()
            assert output(second.execute(fresh, "print('after')")) == "after\n"
