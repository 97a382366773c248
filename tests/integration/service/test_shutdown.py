"""A graceful shutdown (SIGTERM) ends every child process: no orphans."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from .server import output, running_server

MARKER = "4242.4242"


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry))
    return found


def test_sigterm_leaves_no_orphans(tmp_path: Path) -> None:
    with running_server("--pool-size", "1") as server:
        first, second = server.create(), server.create()
        for session_id in (first, second):
            replies = server.execute(
                session_id,
                f"import subprocess\nsubprocess.Popen(['sleep', '{MARKER}'], start_new_session=True)",
            )
            assert "Popen: returncode: None" in output(replies), replies
        data_dir = str(server.data_dir)
        assert len(_processes_mentioning(MARKER)) >= 2
        assert _processes_mentioning(data_dir), "no kernel seen under the data directory"
        server.process.send_signal(signal.SIGTERM)
        # uvicorn re-raises SIGTERM once its graceful shutdown is over.
        assert server.process.wait(timeout=60) in (0, -signal.SIGTERM)
    assert _processes_mentioning(MARKER) == []
    assert _processes_mentioning(data_dir) == []
