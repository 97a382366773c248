"""Process helpers the shell relies on: /proc lookups and how a shell's end is told."""

from __future__ import annotations

import os
import signal

from lmc_runtime.backends.core.procs import describe_exit, proc_stat, session_members


def test_describe_exit_of_a_shell() -> None:
    assert describe_exit(3, "the shell") == "the shell exited with code 3"
    assert describe_exit(-signal.SIGTERM, "the shell") == "the shell was killed by SIGTERM"
    assert "SIGKILL" in describe_exit(-signal.SIGKILL, "the shell")
    assert describe_exit(None, "the shell") == "the shell ended"


def test_proc_stat_of_this_process() -> None:
    found = proc_stat(os.getpid())
    assert found is not None
    _state, group, session = found
    assert group == os.getpgrp() and session == os.getsid(0)
    assert os.getpid() in session_members(session)


def test_proc_stat_of_no_process_is_none() -> None:
    assert proc_stat(2**22 + 12345) is None
