"""lmc_runtime.procs: exits, descriptors, log tails and /proc, on this process."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from lmc_runtime import procs
from lmc_runtime.procs import (
    close_watched,
    describe_exit,
    proc_stat,
    read_available,
    read_tail,
    session_members,
    signal_group,
)

from ..waiters import wait_on_a_new_pipe

# -- describe_exit -----------------------------------------------------------------


def test_an_exit_is_one_sentence_naming_the_interpreter_and_the_cause() -> None:
    assert describe_exit(None, "node") == "node ended"
    assert describe_exit(0, "node") == "node exited with code 0"
    assert describe_exit(3, "the kernel") == "the kernel exited with code 3"
    assert describe_exit(-signal.SIGTERM, "node") == "node was killed by SIGTERM"


def test_sigkill_hints_at_the_out_of_memory_killer() -> None:
    assert describe_exit(-signal.SIGKILL, "node") == (
        "node was killed by SIGKILL (often the out-of-memory killer)"
    )


def test_sigsegv_is_a_crash() -> None:
    assert describe_exit(-signal.SIGSEGV, "bash") == (
        "bash crashed with a segmentation fault (SIGSEGV)"
    )


def test_an_unknown_signal_is_named_by_its_number() -> None:
    assert describe_exit(-200, "node") == "node was killed by signal 200"


# -- read_available ----------------------------------------------------------------


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    yield read_fd, write_fd
    os.close(read_fd)
    os.close(write_fd)


def test_read_available_is_empty_when_nothing_was_written(pipe: tuple[int, int]) -> None:
    assert read_available(pipe[0]) == b""


def test_read_available_returns_what_is_there(pipe: tuple[int, int]) -> None:
    os.write(pipe[1], b"abc")
    os.write(pipe[1], b"def")
    assert read_available(pipe[0]) == b"abcdef"
    assert read_available(pipe[0]) == b""


def test_read_available_is_none_at_the_end() -> None:
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        os.write(write_fd, b"last")
        os.close(write_fd)
        assert read_available(read_fd) == b"last"
        assert read_available(read_fd) is None
    finally:
        os.close(read_fd)


def test_read_available_is_none_on_a_closed_descriptor(pipe: tuple[int, int]) -> None:
    fd = os.dup(pipe[0])
    os.close(fd)
    assert read_available(fd) is None


def test_a_watched_descriptor_closes_without_taking_another_waiters_wake_up() -> None:
    """Regression: a reader woken by ``notify_closing`` drops its registration by
    descriptor number when it next runs. With the descriptor closed at once, a
    task that ran first could get the same number for a new descriptor and wait
    on it; the old reader then dropped *its* registration and it never woke (a
    kernel's socket watch, so a session that failed to start after 60 s)."""
    seen: list[str] = []

    async def main() -> None:
        old, old_end = os.pipe()

        async def reader() -> None:
            with pytest.raises(anyio.ClosedResourceError):
                await anyio.wait_readable(old)
            seen.append("the reader was told")

        async with anyio.create_task_group() as tg:
            go = anyio.Event()
            tg.start_soon(reader)
            tg.start_soon(wait_on_a_new_pipe, go, seen)
            await anyio.wait_all_tasks_blocked()
            go.set()
            close_watched(old)
        os.close(old_end)
        with pytest.raises(OSError):
            os.fstat(old)  # it was closed, a moment later

    anyio.run(main)
    assert sorted(seen) == ["the newcomer woke", "the reader was told"]


def test_a_watched_descriptor_closes_at_once_outside_an_event_loop(
    pipe: tuple[int, int],
) -> None:
    fd = os.dup(pipe[0])
    close_watched(fd)
    with pytest.raises(OSError):
        os.fstat(fd)


# -- read_tail ---------------------------------------------------------------------


def test_read_tail_keeps_the_last_non_empty_lines(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("one\n\ntwo\n   \nthree\nfour\n")
    assert read_tail(log, lines=2) == "three\nfour"
    assert read_tail(log) == "one\ntwo\nthree\nfour"


def test_read_tail_skips_lines_with_the_given_text(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("keep 1\nnoise: x\nkeep 2\n")
    assert read_tail(log, skip="noise") == "keep 1\nkeep 2"


def test_read_tail_reads_only_the_end_of_a_big_file(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("first\n" + "x" * 100_000 + "\nlast\n")
    assert read_tail(log, lines=10).endswith("last")
    assert "first" not in read_tail(log, lines=10)


def test_read_tail_does_not_follow_a_link(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("do not show\n")
    (tmp_path / "log").symlink_to(secret)
    assert read_tail(tmp_path / "log") == ""


def test_read_tail_of_a_fifo_is_empty_and_does_not_block(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "log")
    assert read_tail(tmp_path / "log") == ""


def test_read_tail_of_a_missing_file_or_a_folder_is_empty(tmp_path: Path) -> None:
    assert read_tail(tmp_path / "none") == ""
    assert read_tail(tmp_path) == ""


# -- /proc ---------------------------------------------------------------------------


def test_proc_stat_of_this_process() -> None:
    found = proc_stat(os.getpid())
    assert found is not None
    state, pgid, sid = found
    assert state in ("R", "S") and pgid == os.getpgrp() and sid == os.getsid(0)


def test_session_members_include_this_process() -> None:
    assert os.getpid() in session_members(os.getsid(0))


@pytest.fixture
def fake_proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(procs, "_PROC", tmp_path)
    return tmp_path


def _stat(proc: Path, pid: int, name: str, state: str, pgid: int, sid: int) -> None:
    (proc / str(pid)).mkdir()
    (proc / str(pid) / "stat").write_bytes(f"{pid} ({name}) {state} 1 {pgid} {sid} 0 -1".encode())


def test_proc_stat_reads_past_a_command_name_with_parentheses(fake_proc: Path) -> None:
    _stat(fake_proc, 42, "evil) R 1 2 3 (x", "S", 40, 30)
    assert proc_stat(42) == ("S", 40, 30)


def test_proc_stat_of_a_process_that_is_gone_or_garbled_is_none(fake_proc: Path) -> None:
    assert proc_stat(7) is None
    (fake_proc / "8").mkdir()
    (fake_proc / "8" / "stat").write_bytes(b"8 (x) S 1 notanumber")
    assert proc_stat(8) is None


def test_session_members_leave_out_zombies_and_other_sessions(fake_proc: Path) -> None:
    _stat(fake_proc, 10, "leader", "S", 10, 10)
    _stat(fake_proc, 11, "child", "R", 11, 10)
    _stat(fake_proc, 12, "zombie", "Z", 10, 10)
    _stat(fake_proc, 13, "other", "S", 13, 13)
    (fake_proc / "self").mkdir()
    assert sorted(session_members(10)) == [10, 11]


def test_signal_group_refuses_no_group_and_reaches_its_own() -> None:
    assert signal_group(0) is False and signal_group(-5) is False
    assert signal_group(os.getpgrp(), 0) is True
