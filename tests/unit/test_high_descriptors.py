"""Regression: a server with many sessions holds descriptors past 1024, where
``select(2)`` stops working (Python raises ValueError, "filedescriptor out of
range"). A burst of 100 sessions hit it: closing sessions failed, and a shell's
``output_pending`` said "nothing" whatever the terminal held. Every wait on one
descriptor goes through ``poll(2)``, which takes any number."""

from __future__ import annotations

import ast
import contextlib
import os
import resource
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

import lmc_runtime
from lmc_runtime.procs import readable_now, wait_readable
from lmc_runtime.sandbox.forks import ForkedKernel

HIGH = 1500


@pytest.fixture
def high_fd() -> Iterator[Callable[[int], int]]:
    """Moves a descriptor to a number past select's 1024 (closed after the test)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= HIGH + 64:
        pytest.skip(f"the descriptor limit {hard} is too low to open descriptor {HIGH}")
    if soft != resource.RLIM_INFINITY and soft <= HIGH + 64:
        resource.setrlimit(
            resource.RLIMIT_NOFILE,
            (HIGH + 64 if hard == resource.RLIM_INFINITY else min(hard, 4096), hard),
        )
    moved: list[int] = []

    def move(fd: int) -> int:
        target = HIGH + len(moved)
        os.dup2(fd, target)
        os.close(fd)
        moved.append(target)
        return target

    yield move
    for fd in moved:
        with contextlib.suppress(OSError):
            os.close(fd)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_readable_now_sees_data_on_a_descriptor_past_1024(high_fd: Callable[[int], int]) -> None:
    read, write = os.pipe()
    read = high_fd(read)
    assert not readable_now(read)
    os.write(write, b"x")
    assert readable_now(read)
    assert wait_readable(read, 1.0)
    os.close(write)


def test_readable_now_is_false_for_a_closed_descriptor() -> None:
    read, write = os.pipe()
    os.close(read)
    os.close(write)
    assert not readable_now(read)
    assert not readable_now(-1)  # a descriptor already given up


def test_a_forked_kernel_past_1024_reads_its_exit(high_fd: Callable[[int], int]) -> None:
    ours, broker = socket.socketpair()
    fd = high_fd(os.dup(ours.fileno()))
    ours.close()
    kernel = ForkedKernel(0, -1, socket.socket(fileno=fd), None, -1)  # type: ignore[arg-type]
    try:
        assert kernel.poll() is None
        broker.send(b'{"status": 256}')
        assert kernel.wait(timeout=5) == 1
        assert kernel.returncode == 1
    finally:
        kernel._report.close()
        broker.close()


def test_nothing_waits_on_descriptors_with_select() -> None:
    """The class of the bug: ``select.select`` anywhere in the package."""
    root = Path(lmc_runtime.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "select"
                and isinstance(node.value, ast.Name)
                and node.value.id == "select"
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not found, f"select.select caps descriptors at 1024; use poll: {found}"


def test_a_forked_kernel_s_poll_leaves_its_exit_to_the_task_waiting_for_it() -> None:
    """Regression: ``poll()`` read the fork server's report (and closed its socket) while
    a task waited on it in ``ended()``: that task was left waiting on a descriptor
    that would say nothing more (or on a number another descriptor then took)."""
    ours, broker = socket.socketpair()
    kernel = ForkedKernel(0, -1, ours, None, -1)  # type: ignore[arg-type]  # no holder

    async def main() -> None:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(kernel.ended)
                await anyio.wait_all_tasks_blocked()
                broker.send(b'{"status": 256}')
                assert kernel.poll() is None  # the waiting task reads it

    try:
        anyio.run(main)
        assert kernel.returncode == 1
    finally:
        ours.close()
        broker.close()
