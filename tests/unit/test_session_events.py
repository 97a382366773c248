"""The feed of session changes: each subscriber's queue is bounded, and a slow
one is dropped instead of growing the server's memory."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import pytest

from lmc_runtime.service.feed import SessionEvents


@dataclass
class FakeSession:
    id: str


def test_every_subscriber_gets_each_event_with_the_session_described() -> None:
    hub = SessionEvents()
    hub.describe = lambda session: {"id": session.id, "state": "idle"}
    first, second = hub.subscribe(), hub.subscribe()
    hub.publish("created", FakeSession("s1"))
    for receive in (first, second):
        event = receive.receive_nowait()
        assert event["type"] == "created" and event["id"] == "s1"
        assert event["session"] == {"id": "s1", "state": "idle"}


def test_a_subscriber_that_falls_behind_is_dropped_and_its_feed_ends() -> None:
    hub = SessionEvents(queue_size=4)
    slow, fast = hub.subscribe(), hub.subscribe()
    for n in range(4):
        hub.publish("state", FakeSession(f"s{n}"))
        assert fast.receive_nowait()["id"] == f"s{n}"
    assert hub.subscribers == 2
    hub.publish("state", FakeSession("s4"))  # the fifth: past the slow one's queue
    assert hub.subscribers == 1 and hub.dropped == 1
    assert fast.receive_nowait()["id"] == "s4"
    held = [slow.receive_nowait()["id"] for _ in range(4)]
    assert held == ["s0", "s1", "s2", "s3"]  # what it had, then the end: nothing more held
    with pytest.raises(anyio.EndOfStream):
        slow.receive_nowait()


def test_an_unsubscribed_feed_is_forgotten_at_the_next_event() -> None:
    hub = SessionEvents()
    receive = hub.subscribe()
    hub.unsubscribe(receive)
    hub.publish("ended", FakeSession("s1"))
    assert hub.subscribers == 0 and hub.dropped == 0


def test_no_subscriber_no_work() -> None:
    hub = SessionEvents()
    calls: list[str] = []
    hub.describe = lambda session: calls.append(session.id) or {}
    hub.publish("created", FakeSession("s1"))
    assert calls == []
