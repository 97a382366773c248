"""Every thread store, through the same ThreadStore interface: threads, messages,
the envelope, search, errors, unsafe ids and concurrent writers."""

from __future__ import annotations

import threading

import pytest

from lmc_runtime.errors import InvalidThreadId, ThreadExists, ThreadNotFound
from lmc_runtime.messages import Message
from lmc_runtime.store import Thread, ThreadStore

from ..adapters.conversation import CONVERSATION
from .conftest import Reopen


def say(text: str, **fields: object) -> Message:
    return Message.model_validate({"role": "user", "type": "message", "content": text, **fields})


def test_every_store_implements_the_protocol(store: ThreadStore) -> None:
    assert isinstance(store, ThreadStore)


def test_create_get_list_delete(store: ThreadStore) -> None:
    first = store.create("t1", title="First", metadata={"model": "m"})
    second = store.create(title="Second")
    assert isinstance(first, Thread) and first.metadata == {"model": "m"}
    assert store.get("t1") == first
    assert second.id != first.id and store.get(second.id) == second
    assert {t.id for t in store.list()} == {"t1", second.id}
    with pytest.raises(ThreadExists):
        store.create("t1")
    store.delete("t1")
    assert [t.id for t in store.list()] == [second.id]
    for call in (store.get, store.messages, store.delete):
        with pytest.raises(ThreadNotFound):
            call("t1")
    with pytest.raises(ThreadNotFound):
        store.append("t1", [say("x")])


def test_messages_come_back_in_order_and_exactly(store: ThreadStore) -> None:
    store.create("t1")
    store.append("t1", CONVERSATION[:3])
    store.append("t1", CONVERSATION[3:])
    store.append("t1", [])
    assert store.messages("t1") == CONVERSATION


def test_append_fills_in_the_envelope(store: ThreadStore) -> None:
    store.create("t1")
    store.append("t1", [say("a"), say("b", id="m2", in_reply_to="m1", conversation_id="other")])
    first, second = store.messages("t1")
    assert first.id and first.conversation_id == "t1" and first.in_reply_to is None
    assert (second.id, second.in_reply_to, second.conversation_id) == ("m2", "m1", "other")


def test_search_finds_text_case_insensitively_and_honours_limits(store: ThreadStore) -> None:
    store.create("t1")
    store.create("t2")
    store.append("t1", CONVERSATION)
    store.append("t2", [say("no zero division here"), say("100% literal_match")])
    hits = store.search("zerodivisionerror")
    assert [(tid, m.id) for tid, m in hits] == [("t1", "o4"), ("t1", "a2")]
    assert [m.id for _, m in store.search("zero", thread_id="t2")] == [store.messages("t2")[0].id]
    assert len(store.search("zero", limit=1)) == 1
    assert [m.content for _, m in store.search("0% literal_")] == ["100% literal_match"]
    assert store.search("%") and not store.search("iVBOR")  # base64 images are not text
    with pytest.raises(ThreadNotFound):
        store.search("x", thread_id="nope")


@pytest.mark.parametrize(
    "bad", ["", "..", "../etc", "a/b", "a\\b", ".hidden", "-x", "a..b", "x" * 129, "a\x00b"]
)
def test_unsafe_thread_ids_are_refused(store: ThreadStore, bad: str) -> None:
    with pytest.raises(InvalidThreadId):
        store.create(bad)
    for call in (store.get, store.messages, store.delete):
        with pytest.raises(InvalidThreadId):
            call(bad)


def test_concurrent_writers_in_one_process_never_interleave(
    store: ThreadStore, reopen: Reopen
) -> None:
    store.create("t1")
    writers, rounds = 8, 25
    other = reopen()  # a second store on the same folder, file or database writes too

    def write(w: int) -> None:
        target = other if w % 2 else store
        for r in range(rounds):
            target.append("t1", [say(f"{w}:{r}:a" + "x" * 5000), say(f"{w}:{r}:b")])

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    got = [m.content for m in store.messages("t1")]
    assert len(got) == writers * rounds * 2
    for w in range(writers):
        mine = [c.split("x")[0] for c in got if c.startswith(f"{w}:")]
        assert mine == [f"{w}:{r}:{p}" for r in range(rounds) for p in "ab"]
    # each batch stays together
    for index in range(0, len(got), 2):
        assert got[index].split("x")[0][:-1] + "b" == got[index + 1]
