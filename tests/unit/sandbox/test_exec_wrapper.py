"""The exec wrapper every sandboxed process starts through stays cheap to start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lmc_runtime.sandbox.launch import EXEC_WRAPPER


def test_the_wrapper_imports_neither_typing_nor_contextlib_nor_enum() -> None:
    """Guards: importing ``typing`` and ``contextlib`` took 5.5 of the wrapper's
    18 ms of CPU, and ``signal`` (through ``enum``) 5 ms of the 12.5 left, paid by
    every sandboxed process (a session's holder, each shell and node)."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", str(EXEC_WRAPPER), "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "os" in imported and "resource" in imported  # the import log was read
    assert not imported & {"typing", "contextlib", "signal", "enum"}, sorted(imported)


def test_a_small_file_size_limit_still_hands_the_environment_over(tmp_path: Path) -> None:
    """Guards the handoff under a session's file size limit: the wrapper's own
    memory files (the environment, the seccomp program) were capped by it, so a
    session with file_size_bytes under some 2 KB could not start (EFBIG)."""
    script = tmp_path / "limits.sh"  # stands for bwrap, which takes --seccomp FD first
    script.write_text("#!/bin/sh\ngrep 'Max file size' /proc/self/limits\n")
    script.chmod(0o755)
    wrapper = [sys.executable, "-I", "-S", str(EXEC_WRAPPER), "--rlimit", "fsize=600"]
    done = subprocess.run(
        [*wrapper, "--bwrap-env", "--", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "FILLER": "x" * 2000},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[3:5] == ["600", "600"], done.stdout  # it holds for what it starts


def test_the_wrapper_opens_a_fifo_as_the_stdin_of_what_it_starts(tmp_path: Path) -> None:
    """Guards a runner's stdin in a sandbox: the wrapper opens the FIFO (inside,
    by the sandbox's path) without waiting for a writer; with none, a read ends."""
    fifo = tmp_path / "stdin"
    os.mkfifo(fifo)
    reader = "import os, sys; print(os.readlink('/proc/self/fd/0'), repr(sys.stdin.read()))"
    wrapper = [sys.executable, "-I", "-S", str(EXEC_WRAPPER), "--stdin", str(fifo)]
    done = subprocess.run(
        [*wrapper, "--", sys.executable, "-c", reader],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(fifo), "''"]
