"""NativeOutput: a process's own stdout and stderr, its log, its last lines, and forwarding."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from lmc_runtime.backends.core import Output
from lmc_runtime.backends.core.native import NativeOutput

from ....waiters import wait_on_a_new_pipe

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _written(native: NativeOutput, out: bytes, err: bytes) -> None:
    """Write as the kernel would, end the pipes, and read them to the end."""
    os.write(native.launch_args["stdout"], out)
    os.write(native.launch_args["stderr"], err)
    native.launched()
    with anyio.fail_after(10):
        await native.read()


async def test_both_streams_go_to_the_log_and_are_forwarded_when_asked(tmp_path: Path) -> None:
    forwarded: list[Output] = []

    async def forward(output: Output) -> None:
        forwarded.append(output)

    native = NativeOutput(forward, tmp_path / "kernel.log")
    await _written(native, "caf\u00e9\n".encode(), b"oops\n")
    native.close()
    assert sorted(forwarded, key=lambda o: o.stream) == [
        Output("oops\n", "stderr"),
        Output("caf\u00e9\n", "stdout"),
    ]
    assert sorted((tmp_path / "kernel.log").read_bytes().splitlines()) == [
        "caf\u00e9".encode(),
        b"oops",
    ]


async def test_the_last_lines_leave_out_what_came_before_the_kernel_was_up(
    tmp_path: Path,
) -> None:
    native = NativeOutput(None, tmp_path / "kernel.log")
    kernel = os.dup(native.launch_args["stdout"])
    native.launched()
    os.write(kernel, b"banner\n")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(native.read)
            while native.tail() != "banner":  # bounded: read as soon as the reader runs
                await anyio.sleep(0.005)
            native.mark()
            os.write(kernel, b"Traceback\nboom\n")
            os.close(kernel)  # the end of the pipe ends the reader
    assert native.tail() == "Traceback\nboom"
    assert native.tail(1) == "boom"
    native.close()


async def test_a_log_planted_as_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "target").write_text("")
    (tmp_path / "kernel.log").symlink_to(tmp_path / "target")
    with pytest.raises(OSError):
        NativeOutput(None, tmp_path / "kernel.log")


async def test_closing_while_read_never_steals_another_waiters_wake_up() -> None:
    """Regression: close() closed the pipes right after waking their readers. A
    task that ran in between got a pipe's number for a descriptor of its own
    (the watch for a new kernel's sockets) and never woke: the old reader's
    clean-up dropped its registration, and that session failed to start."""
    native = NativeOutput(None)
    held = [os.dup(fd) for fd in native.launch_args.values()]  # the process's ends
    native.launched()
    woke: list[str] = []

    async def read() -> None:
        try:
            await native.read()
        except* anyio.ClosedResourceError:
            pass  # what a reader waiting at the close gets

    async with anyio.create_task_group() as tg:
        go = anyio.Event()
        tg.start_soon(read)
        tg.start_soon(wait_on_a_new_pipe, go, woke)
        await anyio.wait_all_tasks_blocked()
        go.set()
        native.close()
    for fd in held:
        os.close(fd)
    assert woke == ["the newcomer woke"]


async def test_regression_read_now_takes_what_is_there_and_never_follows_a_writer() -> None:
    """Regression: ``read_now`` read for as long as the pipe had data, so a child that
    kept writing held back the run's end (and the event loop, when handing on did
    not yield). Now it takes what the pipe held when it was called, and no more."""
    writes = 0

    async def forward(output: Output) -> None:
        nonlocal writes
        if writes < 1000:  # a writer always a step ahead of the reader
            writes += 1
            os.write(kernel, b"y" * 4096)

    native = NativeOutput(forward)
    kernel = os.dup(native.launch_args["stdout"])
    native.launched()
    try:
        os.write(kernel, b"x" * 4096)
        with anyio.fail_after(10):
            await native.read_now()
        assert writes == 1
    finally:
        os.close(kernel)
        native.close()
