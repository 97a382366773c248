"""Closing a Computer leaves no kernel process behind, even mid-restart."""

from __future__ import annotations

import time
from pathlib import Path

from lmc_runtime import Computer

from ..conftest import run


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(proc.name))
    return found


def test_close_ends_the_kernel_process() -> None:
    computer = Computer()
    with computer:
        run(computer, "print(1)")
        work_dir = str(computer._work_dir)
        assert _processes_mentioning(work_dir)
    assert _processes_mentioning(work_dir) == []


def test_close_during_an_automatic_restart_leaves_no_kernel_behind() -> None:
    """Guards the shutdown/restart ordering: shutdown waits for a restart in flight,
    so the restart cannot launch a kernel after the old group was killed."""
    computer = Computer()
    with computer:
        run(computer, "print(1)")
        work_dir = str(computer._work_dir)
        run(computer, "import os, threading\nthreading.Timer(0.05, os._exit, (1,)).start()")
        time.sleep(0.12)  # the kernel is dead and the watcher is restarting it now
    assert _processes_mentioning(work_dir) == []
