"""Attacks on what the next start does with a killed server's session folders:
the code plants links to a host folder in its home, ``/run/lmc`` and every other
folder it can write, locks folders, and leaves a run going and a process behind;
the server dies by SIGKILL and starts again on the same data directory (stale
cleanup, unmounting, removal, and the write-ahead closing the lost run)."""

from __future__ import annotations

import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.service.server import TOKEN, _running, output

from .attacks import FIND_WRITABLE, execute
from .harness import Account, as_user

pytestmark = pytest.mark.timeout(300)

#: Links to the host folder (and to a file in it) in every writable folder, in a
#: folder locked with mode 000, and a process that keeps writing.
_PLANT = (
    FIND_WRITABLE
    + r"""
import os, subprocess
planted = 0
for top in writable() + ["/run/lmc", "/tmp", "/dev/shm", "/home/user"]:
    for name, target in (("hostdir", "{host}"), ("hostfile", "{host}/keep.txt"),
                         ("site-packages", "{host}"), ("cache", "{host}")):
        try:
            os.symlink(target, os.path.join(top, name))
            planted += 1
        except OSError:
            pass
    locked = os.path.join(top, "locked")
    try:
        os.makedirs(locked, exist_ok=True)
        os.symlink("{host}", os.path.join(locked, "inside"))
        os.chmod(locked, 0)
        planted += 1
    except OSError:
        pass
subprocess.Popen(["sh", "-c", "while :; do echo x >> /home/user/busy; done"],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("planted", planted)
"""
)


def _writers() -> list[int]:
    """Host processes still running the writer the code left behind."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if b"/home/user/busy" in cmdline:
                found.append(int(entry))
    return found


@pytest.fixture
def host_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lmc-stale-") as tmp:
        os.chmod(tmp, 0o777)
        (Path(tmp) / "keep.txt").write_text("keep")
        os.chmod(Path(tmp) / "keep.txt", 0o666)
        yield Path(tmp)


def _held_run(url: str, session_id: str, started: threading.Event) -> None:
    """A run that is still going when the server is killed."""
    body = {
        "role": "assistant",
        "type": "code",
        "format": "python",
        "content": "import time\nprint('going', flush=True)\ntime.sleep(600)",
    }
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        with httpx.stream(
            "POST",
            f"{url}/v1/sessions/{session_id}/execute",
            json=body,
            headers=headers,
            timeout=120,
        ) as response:
            for line in response.iter_lines():
                if "going" in line:
                    started.set()
    except httpx.HTTPError:
        pass


def test_a_killed_server_s_planted_sessions_never_lead_the_next_start_to_host_files(
    account: Account, host_dir: Path
) -> None:
    """After SIGKILL, the next start on the same data directory removes the session
    folders without following the links the code planted (the host folder keeps its
    file and mode), leaves none of the session's processes, gives the lost run its
    server_lost final message, and serves."""
    before = sorted((p.name, p.stat().st_mode) for p in host_dir.iterdir())
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o755)
        data = Path(tmp) / "data"
        data.mkdir()
        if not account.root:
            os.chown(data, account.uid, account.gid)
        shared = () if account.root else ("--allow-shared-limits",)
        args: tuple[str, ...] = ("--pool-size", "0", "--max-sessions", "2", *shared)
        prefix = as_user(account)
        with _running(data, args, TOKEN, prefix=prefix) as first:
            sid = first.create(languages=["python"])
            planted = output(execute(first, sid, "python", _PLANT.replace("{host}", str(host_dir))))
            assert "planted" in planted and "planted 0" not in planted, planted
            assert _writers(), "the code's writer did not start"
            started = threading.Event()
            runner = threading.Thread(target=_held_run, args=(first.url, sid, started), daemon=True)
            runner.start()
            assert started.wait(60), first.log()
            first.process.send_signal(signal.SIGKILL)
            first.process.wait(timeout=30)
        with _running(data, args, TOKEN, prefix=prefix) as second:
            assert not (data / "sessions" / sid).exists()
            assert _writers() == [], "the session's writer outlived the stale cleanup"
            transcript = data / "threads" / sid / "messages.jsonl"
            lost = transcript.read_text() if transcript.is_file() else ""
            runner.join(timeout=30)
            fresh = second.create(languages=["python"])
            assert output(execute(second, fresh, "python", "print('after')")) == "after\n"
            second.delete(fresh)
        after = sorted((p.name, p.stat().st_mode) for p in host_dir.iterdir())
        assert after == before
        assert (host_dir / "keep.txt").read_text() == "keep"
        assert "server_lost" in lost, lost[-500:]
