"""The pool grows after a burst of creations and shrinks back after the cool-down."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from .server import TOKEN, Server, final_status, output, running_server, wait_for_pool

#: Long enough for the pool to refill on a busy 2-core machine, short for a test.
_COOLDOWN = 8.0


def _create_at_once(server: Server, count: int) -> list[dict[str, object]]:
    headers = {"Authorization": f"Bearer {TOKEN}"}

    def create(_: int) -> dict[str, object]:
        response = httpx.post(server.url + "/v1/sessions", json={}, headers=headers, timeout=60)
        assert response.status_code == 201, response.text
        body: dict[str, object] = response.json()
        return body

    with ThreadPoolExecutor(count) as threads:
        return list(threads.map(create, range(count)))


def _wait_for_pool_at_most(server: Server, ready: int, within: float) -> None:
    deadline = time.monotonic() + within
    while httpx.get(server.url + "/healthz", timeout=5).json()["pool_ready"] > ready:
        assert time.monotonic() < deadline, f"the pool did not shrink to {ready} in {within} s"
        time.sleep(0.1)


def test_a_burst_grows_the_pool_which_serves_the_next_burst_then_shrinks_back() -> None:
    flags = ("--pool-size", "1", "--pool-max", "3", "--pool-cooldown", str(_COOLDOWN))
    with running_server(*flags, "--max-sessions", "6") as server:
        wait_for_pool(server, 1)
        first = _create_at_once(server, 3)
        assert sum(bool(each["pooled"]) for each in first) <= 1  # the floor held one
        for each in first:
            server.delete(str(each["id"]))
        wait_for_pool(server, 3)  # it grew to the burst's size

        second = _create_at_once(server, 3)
        assert all(each["pooled"] for each in second), second
        messages = server.execute(str(second[0]["id"]), "print(6 * 7)")
        assert final_status(messages) == "ok" and output(messages) == "42\n"
        for each in second:
            server.delete(str(each["id"]))
        wait_for_pool(server, 3)  # refilled for the next burst

        # No burst for the cool-down: back to the floor, the others ended.
        _wait_for_pool_at_most(server, 1, within=_COOLDOWN + 30)
        assert httpx.get(server.url + "/healthz", timeout=5).json()["pool_ready"] == 1
        assert "pool: ended warm session" in server.log()
