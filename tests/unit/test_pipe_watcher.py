"""A watcher on a pipe (lmc_runtime.pipe_watcher): in a session of its own, it
sees the pipe end when its owner closes it; one that cannot start is a warning."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import pytest

from lmc_runtime import pipe_watcher
from lmc_runtime.pipe_watcher import start_watcher

SCRIPT = (
    "import sys, os\nsys.stdin.buffer.read()\nopen(sys.argv[1], 'w').write(str(os.getsid(0)))\n"
)


def test_the_watcher_runs_in_a_session_of_its_own_until_the_pipe_ends(tmp_path: Path) -> None:
    script, seen = tmp_path / "watch.py", tmp_path / "seen"
    script.write_text(SCRIPT)
    started = start_watcher(script, str(seen), failure="no watcher", quiet=True)
    assert started is not None
    process, write = started
    try:
        assert process.poll() is None  # waits for the pipe to end
        os.close(write)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert int(seen.read_text()) == process.pid  # its own session


def test_a_watcher_that_cannot_start_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refused(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        raise OSError("no more processes")

    monkeypatch.setattr(pipe_watcher.subprocess, "Popen", refused)
    before = set(os.listdir("/proc/self/fd"))
    with caplog.at_level(logging.WARNING, logger="lmc_runtime.pipe_watcher"):
        assert start_watcher(tmp_path / "watch.py", failure="the watcher failed") is None
    assert "the watcher failed" in caplog.text
    assert set(os.listdir("/proc/self/fd")) == before  # neither end of the pipe is left open
