"""A paused session (E2B's pause: its processes stopped where they stand) shows
as ``paused`` in the API, in ``GET /v1/events`` and on the sessions page, and
as ``idle`` again once it is resumed."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from ..service.server import TOKEN, Server
from .conftest import logged_in

#: Seconds a test waits for an event at the most.
WAIT = 30.0


def _e2b(server: Server) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"X-API-Key": TOKEN}, timeout=60)


@contextmanager
def sandbox(server: Server) -> Iterator[tuple[str, str]]:
    """An E2B sandbox of ``server``: (its sandbox id, its lmc session id), killed after."""
    with server.client() as client:
        before = {s["id"] for s in client.get("/v1/sessions").json()["sessions"]}
        with _e2b(server) as e2b:
            made = e2b.post("/sandboxes", json={"templateID": "base", "timeout": 300})
            assert made.status_code == 201, made.text
            sandbox_id = made.json()["sandboxID"]
            try:
                after = {s["id"] for s in client.get("/v1/sessions").json()["sessions"]}
                (session_id,) = after - before
                yield sandbox_id, session_id
            finally:
                e2b.delete(f"/sandboxes/{sandbox_id}")


def _state(server: Server, session_id: str) -> str:
    with server.client() as client:
        return str(client.get(f"/v1/sessions/{session_id}").json()["state"])


def _events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("data: "):
            yield json.loads(line[len("data: ") :])


def _next_state(events: Iterator[dict[str, Any]], session_id: str, wanted: str) -> dict[str, Any]:
    """The first ``state`` event of ``session_id`` showing ``wanted`` (every read
    is bounded by the client's timeout, the whole wait by :data:`WAIT`)."""
    deadline = time.monotonic() + WAIT
    for event in events:
        assert time.monotonic() < deadline, f"no {wanted!r} event in {WAIT:g} s"
        mine = event["type"] == "state" and event["id"] == session_id
        if mine and event["session"]["state"] == wanted:
            return event
    raise AssertionError("the feed ended")


def test_a_paused_session_is_paused_in_the_api_and_the_feed(server: Server) -> None:
    with sandbox(server) as (sandbox_id, session_id), _e2b(server) as e2b:
        assert _state(server, session_id) == "idle"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        timeout = httpx.Timeout(60, read=WAIT)
        with httpx.stream(
            "GET", server.url + "/v1/events", headers=headers, timeout=timeout
        ) as feed:
            events = _events(feed.iter_lines())
            assert next(events)["type"] == "snapshot"
            assert e2b.post(f"/sandboxes/{sandbox_id}/pause").status_code == 204
            _next_state(events, session_id, "paused")
            assert _state(server, session_id) == "paused"
            with server.client() as client:
                listed = {
                    s["id"]: s["state"] for s in client.get("/v1/sessions").json()["sessions"]
                }
                assert listed[session_id] == "paused"
                assert 'lmc_sessions{state="paused"} 1.0' in client.get("/metrics").text
            resumed = e2b.post(f"/sandboxes/{sandbox_id}/connect", json={"timeout": 300})
            assert resumed.status_code == 201, resumed.text
            _next_state(events, session_id, "idle")
        assert _state(server, session_id) == "idle"


def test_the_sessions_page_shows_a_pause_and_a_resumption(page: Any, server: Server) -> None:
    with sandbox(server) as (sandbox_id, session_id), _e2b(server) as e2b:
        logged_in(page)
        page.click("#nav a[data-page='sessions']")
        state = f"tr[data-id='{session_id}'] td[data-col='state']"
        page.wait_for_selector(f"{state}:text-is('idle')")
        assert e2b.post(f"/sandboxes/{sandbox_id}/pause").status_code == 204
        page.wait_for_selector(f"{state}:text-is('paused')")
        page.fill("#filter", "paused")
        page.wait_for_selector(f"tr[data-id='{session_id}']")
        assert e2b.post(f"/sandboxes/{sandbox_id}/resume", json={}).status_code == 201
        page.wait_for_selector(f"tr[data-id='{session_id}']", state="detached")
        page.fill("#filter", "")
        page.wait_for_selector(f"{state}:text-is('idle')")
