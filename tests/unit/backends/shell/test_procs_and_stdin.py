"""Process helpers and the stdin source of a cell."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

from lmc_runtime.backends.shell.procs import describe_exit, proc_stat, session_members
from lmc_runtime.backends.shell.stdin import StdinSource


def test_describe_exit() -> None:
    assert describe_exit(3, None) == "the shell exited with status 3"
    assert describe_exit(None, signal.SIGKILL) == "the shell was killed by SIGKILL"
    assert describe_exit(None, None) == "the shell ended"


def test_proc_stat_of_this_process() -> None:
    found = proc_stat(os.getpid())
    assert found is not None
    _state, group, session = found
    assert group == os.getpgrp() and session == os.getsid(0)
    assert os.getpid() in session_members(session)


def test_proc_stat_of_no_process_is_none() -> None:
    assert proc_stat(2**22 + 12345) is None


def test_without_a_callback_stdin_is_dev_null(tmp_path: Path) -> None:
    source = StdinSource(tmp_path, 1, interactive=False)
    assert source.path == os.devnull and not source.interactive
    assert source.reader_waiting(os.getsid(0)) is False
    source.close()


def test_with_a_callback_stdin_is_a_fifo_removed_on_close(tmp_path: Path) -> None:
    source = StdinSource(tmp_path, 2, interactive=True)
    fifo = Path(source.path)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    source.answer("hello")
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert os.read(fd, 100) == b"hello\n"
    finally:
        os.close(fd)
    source.close()
    assert not fifo.exists()
