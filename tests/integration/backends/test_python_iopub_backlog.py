"""The Python kernel's IOPub keeps what its reader has not read yet.

IOPub is PUB/SUB (XPUB in ipykernel 7): past the send high-water mark of the
kernel's socket (1,000 messages by default) it drops messages without a word.
The runtime's reader has no receive high-water mark, yet on a loaded machine it
can fall behind for long enough: a clean run of the suite lost 7 of 10,000
displays that way. The launcher (``kernels/lmc-python/lmc_kernel.py``) gives
IOPub no send high-water mark.

The test holds a reader back for certain: its subscriber keeps one message at a
time and reads none until the run has ended, so everything else waits in the
kernel. Every display must still arrive, in order, then the run's idle status.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.connect import write_connection_file

from lmc_runtime import Computer

pytestmark = pytest.mark.integration

LAUNCHER = Path(__file__).parents[3] / "kernels" / "lmc-python" / "lmc_kernel.py"
DISPLAYS = 4000
WAIT = 120.0
SILENCE = 15.0


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[BlockingKernelClient]:
    connection, _ = write_connection_file(
        str(tmp_path / "kernel.json"), transport="ipc", ip=str(tmp_path / "k")
    )
    process = subprocess.Popen(
        [sys.executable, str(LAUNCHER), "-f", connection, "--HistoryManager.enabled=False"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    client = BlockingKernelClient()
    client.load_connection_file(connection)
    client.start_channels()
    try:
        client.wait_for_ready(timeout=WAIT)
        yield client
    finally:
        client.stop_channels()
        process.kill()
        process.wait(WAIT)


def _subscriber(client: BlockingKernelClient) -> zmq.Socket[bytes]:
    """A subscriber that keeps a single message and a small receive buffer."""
    sub: zmq.Socket[bytes] = client.context.socket(zmq.SUB)
    sub.rcvhwm, sub.rcvbuf, sub.linger = 1, 4096, 0
    sub.subscribe(b"")
    sub.connect(client._make_url("iopub"))
    # Subscribed once a message reaches it: a kernel_info's status does.
    while True:
        client.kernel_info()
        if sub.poll(1000):
            break
    return sub


def _message(client: BlockingKernelClient, frames: list[bytes]) -> tuple[str, str, object]:
    msg = client.session.deserialize(client.session.feed_identities(frames)[1])
    state = msg["content"].get("execution_state")
    return msg["parent_header"].get("msg_id", ""), msg["header"]["msg_type"], state


def test_regression_displays_wait_for_a_reader_that_falls_behind(
    kernel: BlockingKernelClient,
) -> None:
    sub = _subscriber(kernel)
    try:
        while sub.poll(200):  # what the kernel_info calls left
            sub.recv_multipart()
        code = (
            "from IPython.display import display\n"
            f"for i in range({DISPLAYS}):\n"
            "    display({'text/plain': str(i).rjust(1000)}, raw=True)\n"
        )
        run = kernel.execute(code)
        reply = kernel.get_shell_msg(timeout=WAIT)
        while reply["parent_header"]["msg_id"] != run:  # the kernel_info calls' replies
            reply = kernel.get_shell_msg(timeout=WAIT)
        assert reply["content"]["status"] == "ok"
        displays = 0
        idle = False
        # All of it was sent before the reply: a silence this long means it is lost.
        while not idle and sub.poll(int(SILENCE * 1000)):
            parent, kind, state = _message(kernel, sub.recv_multipart())
            if parent == run:
                displays += kind == "display_data"
                idle = state == "idle"
        assert (displays, idle) == (DISPLAYS, True)
    finally:
        sub.close(0)


#: The kernel's IOPub send mark, and how many module files ipykernel listed.
LEAN = (
    "import zmq\nk = get_ipython().kernel\n"
    "print(k.iopub_socket.io_thread.socket.getsockopt(zmq.SNDHWM), len(k._kernel_modules))"
)


def _output(computer: Computer, code: str) -> str:
    return "".join(m.content for m in computer.run("python", code) if m.format == "output")


def test_regression_a_rolled_back_or_forked_kernel_starts_as_lean(tmp_path: Path) -> None:
    """A kernel revived from a checkpoint (``lmc_revive.py``) makes its own IOPub,
    unbounded, and its kernel without a walk of every module of the image
    (``lmc_lean.py``)."""
    with Computer(cwd=tmp_path) as computer:
        assert _output(computer, LEAN) == "0 0\n"
        checkpoint = computer.checkpoint()
        computer.rollback(checkpoint)
        assert _output(computer, LEAN) == "0 0\n"
        with computer.fork() as fork:
            assert _output(fork, LEAN) == "0 0\n"
