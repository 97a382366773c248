"""How a rollback ends the kernel it replaces: the old one is killed while the new
one starts from the checkpoint, and that kill is finished whatever happens to
the rollback (its caller cancelled it, the kill failed)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from lmc_runtime import Computer
from lmc_runtime.backends.jupyter.interpreter import JupyterInterpreter

from ...waiters import process_ended

pytestmark = pytest.mark.anyio

#: Bounds every test's waits.
_GUARD = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _interpreter(computer: Computer) -> JupyterInterpreter:
    session = computer._sessions.running("python")
    assert session is not None
    current = session.supervisor.current  # type: ignore[attr-defined]
    assert isinstance(current, JupyterInterpreter)
    return current


async def _output(computer: Computer, code: str) -> str:
    messages = [m async for m in computer.arun("python", code)]
    return "".join(m.content for m in messages if m.format == "output" and m.content)


async def test_a_rollback_cancelled_while_the_new_kernel_starts_still_ends_the_old_one(
    tmp_path: Path,
) -> None:
    """A caller that gives up on a rollback (a client that disconnects) cancels it
    while the new kernel starts: the old kernel's end is not cut short, its ZMQ
    context (and the I/O thread it holds) ends with it; and the session, left
    without a kernel, takes the next rollback."""
    with anyio.fail_after(_GUARD):
        async with Computer(cwd=tmp_path) as computer:
            await _output(computer, "x = 1")
            taken = await computer.acheckpoint()
            old = _interpreter(computer)
            context, provisioner = old._km.context, old._km.provisioner
            assert provisioner is not None
            pidfd = os.pidfd_open(provisioner.pid)
            try:
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as group:

                        async def cancel_once_the_old_kernel_died() -> None:
                            await anyio.wait_readable(pidfd)
                            scope.cancel()

                        group.start_soon(cancel_once_the_old_kernel_died)
                        await computer.arollback(taken)
                assert scope.cancelled_caught, "the rollback ended before the old kernel died"
            finally:
                os.close(pidfd)
            assert context.closed, "the replaced kernel's ZMQ context was left open"
            # No kernel now (the next run would start a fresh one): a rollback is one.
            await computer.arollback(taken)
            assert await _output(computer, "print(x)") == "1\n"


async def test_two_rollbacks_at_once_leave_the_last_kernel_its_files(tmp_path: Path) -> None:
    """Each rollback's replaced kernel is the one it marks to leave the files: the
    second of two rollbacks asked at once replaces the first one's kernel."""
    with anyio.fail_after(_GUARD):
        async with Computer(cwd=tmp_path) as computer:
            await _output(computer, "x = 3")
            taken = await computer.acheckpoint()
            async with anyio.create_task_group() as group:
                group.start_soon(computer.arollback, taken)
                group.start_soon(computer.arollback, taken)
            check = (
                "import glob, os\nfrom ipykernel.kernelapp import IPKernelApp\n"
                "f = IPKernelApp.instance().connection_file\n"
                "d = os.path.dirname(f)\n"
                "print(os.path.exists(f), len(glob.glob(os.path.join(d, '*-kernel-*'))), x)"
            )
            assert await _output(computer, check) == "True 4 3\n"  # 4 sockets: no heartbeat


#: In the checkpoint's state: a kernel revived from it says its pid on ``fifo``
#: before it binds its sockets, then never binds them.
_STUCK = """
import os, threading
from ipykernel.kernelapp import IPKernelApp

def _stuck(app, fifo={fifo!r}):
    with open(fifo, "w") as said:
        said.write(str(os.getpid()))
    threading.Event().wait()

IPKernelApp.init_sockets = _stuck
"""


async def test_a_rollback_given_up_before_the_new_kernel_bound_leaves_no_kernel(
    tmp_path: Path,
) -> None:
    """A rollback cancelled while the revived kernel starts (before it bound its
    sockets): the checkpoint's monitor, whose answer nobody reads any more, ends
    that kernel instead of leaving it behind."""
    fifo = tmp_path / "reviving"
    os.mkfifo(fifo)
    with anyio.fail_after(_GUARD):
        async with Computer(cwd=tmp_path) as computer:
            await _output(computer, _STUCK.format(fifo=str(fifo)))
            taken = await computer.acheckpoint()
            said = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            pid = b""
            try:
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as group:

                        async def cancel_once_it_is_reviving() -> None:
                            nonlocal pid
                            await anyio.wait_readable(said)
                            pid = os.read(said, 32)
                            scope.cancel()

                        group.start_soon(cancel_once_it_is_reviving)
                        await computer.arollback(taken)
            finally:
                os.close(said)
            assert pid, "the revived kernel never said its pid"
            assert await anyio.to_thread.run_sync(process_ended, int(pid), 10.0), (
                "the kernel revived for a cancelled rollback was left running"
            )
