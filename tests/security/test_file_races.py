"""The files API racing the session's own code: the code keeps writing where a
client removes, moves or makes folders, which is the normal case for this API.
Every answer is a success or a typed 4xx, never a 5xx."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.service.server import Server, running_server

pytestmark = pytest.mark.timeout(300)

#: How long the client races the code (seconds).
RACE = 3.0

#: Code that keeps making folders and files under ``churn/`` while ``go`` exists
#: (a bounded number of names: the session's disk has inodes to spare).
CHURN = """
import os
open('go', 'w').close()
n = 0
while os.path.exists('go') and n < 2_000_000:
    try:
        os.makedirs('churn/d%d/e' % (n % 4), exist_ok=True)
        open('churn/d%d/e/f%d' % (n % 4, n % 1000), 'w').close()
        open('churn/f%d' % (n % 1000), 'w').close()
    except OSError:
        pass
    n += 1
print('churned', n)
"""


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with running_server("--pool-size", "0", "--max-sessions", "2") as running:
        yield running


@contextlib.contextmanager
def _churning(server: Server, session_id: str) -> Iterator[None]:
    """The session's code churns ``churn/`` while the block runs; it is stopped after."""
    done = threading.Event()
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(server.execute(session_id, CHURN))
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    with server.client() as client:
        deadline = time.monotonic() + 60
        stat = f"/v1/sessions/{session_id}/stat"
        while client.get(stat, params={"path": "churn"}).status_code != 200:
            assert time.monotonic() < deadline, "the code did not start churning in 60 s"
            time.sleep(0.05)
        try:
            yield
        finally:
            stopped = client.delete(f"/v1/sessions/{session_id}/files/go")
            assert stopped.status_code == 204, stopped.text
            assert done.wait(60), "the churning code did not stop in 60 s"
    assert "churned" in "".join(str(m.get("content")) for m in result[0]), result


def _race(requests: Any) -> dict[int, int]:
    """How often each status answered ``requests()`` (one request each) during :data:`RACE`."""
    statuses: dict[int, int] = {}
    deadline = time.monotonic() + RACE
    while time.monotonic() < deadline:
        response: httpx.Response = requests()
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code < 500, response.text
    return statuses


def test_recursive_delete_of_a_folder_the_code_writes_into_is_never_a_5xx(
    server: Server,
) -> None:
    """Guards against rmdir's "Directory not empty", raised while the code adds
    entries to a folder being removed, reaching the client as 503 io_error."""
    sid = server.create()
    with server.client() as client, _churning(server, sid):
        statuses = _race(
            lambda: client.delete(f"/v1/sessions/{sid}/files/churn", params={"recursive": "true"})
        )
    assert set(statuses) <= {204, 404, 409}, statuses
    assert statuses.get(204, 0) + statuses.get(409, 0) > 0, statuses


def test_mkdir_move_and_list_where_the_code_writes_are_never_a_5xx(server: Server) -> None:
    """Guards against EEXIST, ENOENT and ENOTEMPTY races of mkdir, move and list
    with the session's own writes answering 5xx."""
    sid = server.create()
    turn = [0]

    def one(client: httpx.Client) -> httpx.Response:
        turn[0] += 1
        base = f"/v1/sessions/{sid}"
        match turn[0] % 4:
            case 0:
                return client.post(f"{base}/mkdir", json={"path": "churn/d1/e", "parents": True})
            case 1:
                return client.post(
                    f"{base}/move",
                    json={"source": "churn/d2", "destination": "churn/d3", "overwrite": True},
                )
            case 2:
                return client.get(f"{base}/list", params={"path": "churn/d0/e"})
            case _:
                return client.delete(f"{base}/files/churn/d1", params={"recursive": "true"})

    with server.client() as client, _churning(server, sid):
        statuses = _race(lambda: one(client))
    assert all(status < 500 for status in statuses), statuses
