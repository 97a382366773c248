"""Stores at their edges: text SQLite or PostgreSQL cannot hold as such, LIKE metacharacters,
threads deleted under a reader, and folders Jan itself (or a person) left."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from lmc_runtime.errors import ThreadNotFound
from lmc_runtime.messages import Message
from lmc_runtime.store import JanThreadStore, ThreadStore


def say(text: str) -> Message:
    return Message(role="user", type="message", content=text)


def test_lone_surrogates_in_content_and_title_are_stored(store: ThreadStore) -> None:
    odd = "half a pair \ud800 and an emoji \U0001f600"
    store.create("t1", title=odd)
    store.append("t1", [say(odd)])
    assert store.messages("t1")[0].content == odd
    assert [tid for tid, _ in store.search("half a pair")] == ["t1"]
    assert store.search("\ud800 and") != []


def test_nul_in_content_title_and_metadata_is_stored(store: ThreadStore) -> None:
    # Regression: PostgreSQL's text refuses NUL; only the body keeps it (as JSON escapes).
    odd = "before\x00after"
    store.create("t1", title=odd, metadata={"note": odd})
    store.append("t1", [say(odd)])
    assert store.messages("t1")[0].content == odd
    assert store.get("t1").metadata == {"note": odd}
    assert [m.content for _, m in store.search("after")] == [odd]


@pytest.mark.parametrize("needle", ["%", "_", "100%", "x_y", ".*", "(", "[a]", "\\"])
def test_search_takes_like_and_regex_metacharacters_literally(
    store: ThreadStore, needle: str
) -> None:
    store.create("t1")
    store.append("t1", [say("plain words only"), say(f"it holds {needle} literally")])
    found = store.search(needle)
    assert [m.content for _, m in found] == [f"it holds {needle} literally"]


def test_search_across_threads_survives_threads_deleted_meanwhile(store: ThreadStore) -> None:
    for number in range(20):
        store.create(f"t{number}")
        store.append(f"t{number}", [say("needle")])
    errors: list[BaseException] = []

    def search() -> None:
        for _ in range(10):
            try:
                store.search("needle")
            except Exception as exc:
                errors.append(exc)

    searcher = threading.Thread(target=search)
    searcher.start()
    for number in range(20):
        store.delete(f"t{number}")
    searcher.join(timeout=60)
    assert not searcher.is_alive() and errors == []
    with pytest.raises(ThreadNotFound):
        store.search("needle", thread_id="t3")


def test_jan_thread_folder_deleted_during_use_is_thread_not_found(tmp_path: Path) -> None:
    store = JanThreadStore(tmp_path)
    store.create("gone")
    shutil.rmtree(tmp_path / "threads" / "gone")
    with pytest.raises(ThreadNotFound):
        store.append("gone", [say("x")])
    with pytest.raises(ThreadNotFound):
        store.messages("gone")
    assert [t.id for t in store.list()] == []


def test_jan_append_reads_thread_json_once_and_still_sees_a_delete_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends used to read and parse ``thread.json`` every time (12 us of a
    service run's path); a thread is now looked up by its first append only."""
    store, elsewhere = JanThreadStore(tmp_path), JanThreadStore(tmp_path)
    store.create("t")
    loads = []
    real = JanThreadStore._load
    monkeypatch.setattr(
        JanThreadStore, "_load", lambda self, tid: loads.append(tid) or real(self, tid)
    )
    for n in range(3):
        store.append("t", [say(f"m{n}")])
    assert loads == ["t"]
    elsewhere.delete("t")
    with pytest.raises(ThreadNotFound):
        store.append("t", [say("after")])
    store.create("t")  # made again: appends find it
    store.append("t", [say("again")])
    assert [m.content for m in store.messages("t")] == ["again"]


def test_jan_thread_without_a_messages_file_yet_reads_empty_and_appends(tmp_path: Path) -> None:
    store = JanThreadStore(tmp_path)
    store.create("fresh")
    (tmp_path / "threads" / "fresh" / "messages.jsonl").unlink()
    assert store.messages("fresh") == []
    store.append("fresh", [say("first")])
    assert [m.content for m in store.messages("fresh")] == ["first"]


def test_jan_thread_json_as_jan_or_a_person_left_it_never_breaks_list(tmp_path: Path) -> None:
    store = JanThreadStore(tmp_path)
    threads = tmp_path / "threads"
    written = {
        "jan_1716263400": {"id": "x", "title": "Jan's", "created": 1716263400123, "metadata": {}},
        "odd_created": {"created": 1e400, "metadata": [1, 2]},
        "not_an_object": [1],
    }
    for name, data in written.items():
        (threads / name).mkdir()
        (threads / name / "thread.json").write_text(json.dumps(data))
    (threads / "broken").mkdir()
    (threads / "broken" / "thread.json").write_text("{")
    (threads / "not a safe id").mkdir()
    (threads / "not a safe id" / "thread.json").write_text("{}")
    listed = {t.id: t for t in store.list()}
    assert sorted(listed) == ["jan_1716263400", "odd_created"]
    assert listed["jan_1716263400"].created_at == 1716263400  # Jan's milliseconds, in seconds
    assert listed["odd_created"].created_at == 0 and listed["odd_created"].metadata == {}
