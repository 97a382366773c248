"""A process's end reported on a socket (a forked kernel's broker, a revived
kernel's monitor): the report read, and a reporter gone without a word."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import anyio
import pytest

from lmc_runtime.exit_report import ReportReader, read_exit


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_report_gives_the_exit_code_as_popen_does() -> None:
    ours, reporter = socket.socketpair()
    with ours, reporter:
        reporter.send(b'{"status": 768}')  # exit(3), as waitpid gives it
        assert read_exit(ours, -1) == 3
    ours, reporter = socket.socketpair()
    with ours, reporter:
        reporter.send(b'{"status": 15}')  # killed by SIGTERM
        assert read_exit(ours, -1) == -signal.SIGTERM


@pytest.mark.parametrize("last_word", [b"", b"not json", b'{"no": "status"}'])
def test_a_reporter_gone_without_a_report_takes_the_process_with_it(last_word: bytes) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    pidfd = os.pidfd_open(child.pid)
    ours, reporter = socket.socketpair()
    try:
        if last_word:
            reporter.send(last_word)
        reporter.close()
        assert read_exit(ours, pidfd) == -signal.SIGKILL
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait(timeout=10)
        os.close(pidfd)
        ours.close()
        reporter.close()


@pytest.mark.anyio
async def test_one_task_reads_and_the_others_wait_for_it() -> None:
    ours, reporter = socket.socketpair()
    reader = ReportReader()
    codes: list[int] = []
    reads: list[int] = []

    def read() -> None:
        reads.append(1)
        codes.append(read_exit(ours, -1))

    async def wait() -> None:
        await reader.wait(ours, lambda: bool(codes), read)

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(wait)
                await anyio.wait_all_tasks_blocked()
                assert reader.busy
                reporter.send(b'{"status": 0}')
        assert codes == [0] and reads == [1] and not reader.busy
    finally:
        ours.close()
        reporter.close()
