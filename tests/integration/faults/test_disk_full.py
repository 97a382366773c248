"""A full disk: the data directory (transcripts cannot be written) and a
session's own disk (its code filled it).

The data directory is a 64 MiB tmpfs here, filled by the test: runs go on,
each says its messages are held, a new session is refused with the reason,
and once space is freed every held message is written, in order, none twice.
"""

from __future__ import annotations

import errno
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.store import JanThreadStore

from ..service.server import TOKEN, Server, _running, final_status, output
from .transcripts import held_notices, run_until_stored, stored_runs


@pytest.fixture(scope="module")
def small_data_dir() -> Iterator[Server]:
    """A server whose data directory is a 64 MiB tmpfs (``server.data_dir``)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the data directory needs root")
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)  # sandbox users pass through to their session folders
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(data_dir)], check=True
        )
        try:
            os.chmod(data_dir, 0o755)
            args = ("--pool-size", "0", "--max-sessions", "4")
            with _running(data_dir, args, TOKEN) as server:
                yield server
        finally:
            subprocess.run(["umount", str(data_dir)], check=True)


def _fill(folder: Path) -> Path:
    """Write a file in ``folder`` until its filesystem is full; the file."""
    filler = folder / "filler"
    chunk = b"\0" * (64 << 10)
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while True:
            os.write(fd, chunk)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    return filler


def _run_until_held(server: Server, session_id: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Run until a run's messages are held; that run's messages and the code of every run."""
    codes: list[str] = []
    for number in range(20):
        codes.append(f"print('during-{number}')")
        messages = server.execute(session_id, codes[-1])
        assert output(messages).startswith(f"during-{number}\n"), messages
        assert final_status(messages) == "ok", messages
        if held_notices(messages):
            return messages, codes
    raise AssertionError("20 runs were stored on a full disk")


def test_a_full_data_directory_holds_transcripts_and_writes_them_once_freed(
    small_data_dir: Server,
) -> None:
    """Guards against transcripts dropped silently when the data directory is full
    (they were logged and lost while every run looked stored)."""
    server = small_data_dir
    first = server.create()
    assert output(server.execute(first, "print('before')")) == "before\n"
    filler = _fill(server.data_dir)
    try:
        # The last page of the thread's file may still take a run or two.
        during, written = _run_until_held(server, first)
        (notice,) = held_notices(during)
        assert "No space left on device" in notice["content"], notice
        # At least the run's output and final message (its code, written ahead, may fit).
        assert notice["extras"]["held"] >= 2 and notice["extras"]["dropped"] == 0, notice
        with server.client() as client:
            health = client.get("/healthz").json()
        assert health["transcripts_held"] >= notice["extras"]["held"], health
        # A new session cannot start: refused at once, saying why.
        with server.client() as client:
            refused = client.post("/v1/sessions", json={})
        assert refused.status_code == 503, refused.text
        assert "No space left on device" in refused.json()["error"]["message"], refused.text
    finally:
        filler.unlink()
    runs = run_until_stored(server, first, "after")
    second = server.create()
    assert output(server.execute(second, "print('made after')")) == "made after\n"

    store = JanThreadStore(server.data_dir)
    expected = ["print('before')", *written]
    expected += [f"print('after-{n}')" for n in range(1, runs + 1)]
    assert stored_runs(store, first) == expected
    contents = [m.content for m in store.messages(first)]
    last = written[-1].removeprefix("print('").removesuffix("')") + "\n"
    assert contents.count(last) == 1, contents
    store.close()
    server.delete(first)
    server.delete(second)


FILL_SESSION_DISK = (
    'chunk = b"x" * (1 << 20)\n'
    "try:\n"
    '    with open("fill.bin", "wb") as f:\n'
    "        while True:\n"
    "            f.write(chunk)\n"
    "            f.flush()\n"
    "except OSError as exc:\n"
    '    print("STOPPED", exc.errno)\n'
)


def test_a_session_whose_disk_is_full_still_answers_in_every_way(small_data_dir: Server) -> None:
    """The disk stays full: Python and the shell run, the files API refuses an
    upload with a JSON reason, and removing the file frees the disk."""
    server = small_data_dir
    sid = server.create(languages=["python", "shell"], limits={"disk_bytes": 16 << 20})
    filled = server.execute(sid, FILL_SESSION_DISK)
    assert "STOPPED" in output(filled), filled
    notes = [m for m in filled if (m.get("extras") or {}).get("status") == "disk_limit"]
    assert notes, filled
    for note in notes:
        text = str(note["content"])
        assert "Traceback" not in text and text.count("\n") <= 2, text
    assert output(server.execute(sid, "print('py alive')")) == "py alive\n"
    shell = server.execute(sid, "echo shell alive", language="shell")
    assert output(shell) == "shell alive\n" and final_status(shell) == "ok", shell
    with server.client() as client:
        refused = client.put(f"/v1/sessions/{sid}/files/more.bin", content=b"y" * (4 << 20))
        assert refused.status_code == 413, refused.text
        assert refused.json()["error"]["code"] == "too_large", refused.text
        assert client.delete(f"/v1/sessions/{sid}/files/fill.bin").status_code == 204
        stored = client.put(f"/v1/sessions/{sid}/files/more.bin", content=b"y" * (4 << 20))
        assert stored.status_code == 201, stored.text
    server.delete(sid)
