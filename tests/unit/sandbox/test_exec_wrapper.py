"""The exec wrapper every sandboxed process starts through stays cheap to start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
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


_WRAPPER = [sys.executable, "-I", "-S", str(EXEC_WRAPPER)]


def test_what_the_wrapper_becomes_dies_with_the_thread_that_started_it() -> None:
    """``--die-with-parent``: no wrapper stays, and what it became (bwrap, for a
    forked kernel's holder) is killed once the starting thread ends; why only the
    main thread, which ends with the process, starts a holder that way."""
    argv = [*_WRAPPER, "--die-with-parent", str(os.getpid())]
    argv += ["--", "sh", "-c", "echo up; exec sleep 1000.5772"]
    started: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        started.append(process)
        assert process.stdout is not None
        process.stdout.readline()  # it runs: the signal was asked for before the exec

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    thread.join(60)
    (process,) = started
    try:
        assert not thread.is_alive()
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def test_what_the_wrapper_becomes_lives_on_while_its_thread_does() -> None:
    argv = [*_WRAPPER, "--die-with-parent", str(os.getpid()), "--", "sh", "-c", "read x; echo $x"]
    done = subprocess.run(argv, input=b"still here\n", capture_output=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, b"still here\n"), done.stderr


def test_the_wrapper_refuses_to_become_a_process_its_runtime_would_not_outlive() -> None:
    """``--die-with-parent PID`` where PID is not its parent (the runtime ended
    before the signal was asked for): nothing is started."""
    argv = [*_WRAPPER, "--die-with-parent", "1", "--", "sh", "-c", "echo started"]
    done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (127, b"")
    assert b"has ended" in done.stderr
    both = [*_WRAPPER, "--supervise", str(os.getpid()), "--die-with-parent", str(os.getpid())]
    done = subprocess.run([*both, "--", "true"], capture_output=True, timeout=60, check=False)
    assert done.returncode == 127 and b"exclude each other" in done.stderr
