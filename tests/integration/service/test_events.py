"""``GET /v1/events``: the server-sent feed of session changes, on a real server."""

from __future__ import annotations

import json
import queue
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from .server import TOKEN, Server, running_server

WAIT = 30.0


def test_the_feed_needs_the_token(server: Server) -> None:
    for token in (None, "wrong-token"):
        with server.client(token) as client:
            response = client.get("/v1/events")
        assert response.status_code == 401, response.text
        assert "event:" not in response.text


@contextmanager
def feed(server: Server) -> Iterator[queue.Queue[dict[str, Any]]]:
    """The feed's events, read by a thread into a queue, as they come."""
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    stop = threading.Event()
    client = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=WAIT
    )

    def read() -> None:
        try:
            with client.stream("GET", "/v1/events") as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                for line in response.iter_lines():
                    if stop.is_set():
                        return
                    if line.startswith("data: "):
                        events.put(json.loads(line[6:]))
        except httpx.HTTPError:
            pass  # closed by the test

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield events
    finally:
        stop.set()
        client.close()
        reader.join(WAIT)


def next_of(events: queue.Queue[dict[str, Any]], kind: str, session_id: str) -> dict[str, Any]:
    while True:
        event = events.get(timeout=WAIT)
        if event["type"] == kind and event.get("id") == session_id:
            return event


def test_created_busy_idle_and_ended_arrive_as_they_happen(server: Server) -> None:
    before = server.create(languages=["python"])
    with feed(server) as events:
        snapshot = events.get(timeout=WAIT)
        assert snapshot["type"] == "snapshot"
        assert before in [s["id"] for s in snapshot["sessions"]]
        session_id = server.create(languages=["python"], title="watched")
        created = next_of(events, "created", session_id)
        assert created["session"]["languages"] == ["python"]
        server.execute(session_id, "print(1)")
        assert next_of(events, "state", session_id)["session"]["state"] == "busy"
        assert next_of(events, "state", session_id)["session"]["state"] == "idle"
        server.delete(session_id)
        assert next_of(events, "ended", session_id)["id"] == session_id
    server.delete(before)


def test_an_open_feed_does_not_hold_up_the_shutdown() -> None:
    with running_server() as own, feed(own) as events:
        assert events.get(timeout=WAIT)["type"] == "snapshot"
        started = time.monotonic()
        own.process.send_signal(signal.SIGTERM)
        # uvicorn re-raises SIGTERM once its graceful shutdown is over.
        assert own.process.wait(timeout=WAIT) in (0, -signal.SIGTERM)
        assert "lmc serve stopped" in own.log(wait=WAIT)
        assert time.monotonic() - started < 10, own.log()
