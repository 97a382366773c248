"""Crash safety of the Jan folder store: a writer process is killed with SIGKILL in
the middle of an append; loading skips the torn last line with a warning, and the
thread stays usable."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from lmc_runtime.store import JanThreadStore

from .writers import assert_acknowledged_prefix, kill, killed_while_writing, read_line, start

pytestmark = pytest.mark.integration

#: Appends `complete` whole batches, then starts one more append, writes half of its
#: bytes, says so and waits to be killed: a crash in the middle of an append.
TORN_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from lmc_runtime.messages import Message
    from lmc_runtime.store import JanThreadStore

    root, complete = sys.argv[1], int(sys.argv[2])
    store = JanThreadStore(root)
    def batch(n):
        return [Message(role="computer", type="console", format="output",
                        content=f"batch {n} " + "y" * 20000, id=f"m{n}")]
    for n in range(complete):
        store.append("t1", batch(n))
    real_write = os.write
    def torn_write(fd, data):
        written = real_write(fd, bytes(data)[: len(data) // 2])
        print("torn", written, flush=True)
        signal.pause()
    os.write = torn_write
    store.append("t1", batch(complete))
    """
)

#: Appends batches as fast as it can, saying after each how many are durable.
BUSY_WRITER = textwrap.dedent(
    """
    import sys
    from lmc_runtime.messages import Message
    from lmc_runtime.store import JanThreadStore

    store = JanThreadStore(sys.argv[1])
    n = 0
    while True:
        store.append("t1", [Message(role="user", type="message", content=f"{n}:" + "z" * 50000, id=f"b{n}")])
        print(n, flush=True)
        n += 1
    """
)


def test_writer_killed_mid_append_leaves_a_torn_line_that_is_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    JanThreadStore(tmp_path).create("t1")
    proc = start(TORN_WRITER, str(tmp_path), "3")
    try:
        line = read_line(proc)
        assert line.startswith("torn ")
    finally:
        kill(proc)
    raw = (tmp_path / "threads" / "t1" / "messages.jsonl").read_bytes()
    assert not raw.endswith(b"\n")  # the crash really tore the last line

    store = JanThreadStore(tmp_path)
    with caplog.at_level(logging.WARNING):
        loaded = store.messages("t1")
    assert [m.id for m in loaded] == ["m0", "m1", "m2"]
    assert "torn last line" in caplog.text

    # The next append starts on a fresh line, and the torn bytes stay skipped.
    store.append("t1", [loaded[0].model_copy(update={"id": "after"})])
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert [m.id for m in store.messages("t1")] == ["m0", "m1", "m2", "after"]
    assert "corrupt line 4" in caplog.text


def test_writer_killed_at_any_moment_leaves_a_loadable_prefix(tmp_path: Path) -> None:
    JanThreadStore(tmp_path).create("t1")
    durable = killed_while_writing(BUSY_WRITER, str(tmp_path), acknowledgements=20)
    assert_acknowledged_prefix(JanThreadStore(tmp_path).messages("t1"), durable, 50000)
