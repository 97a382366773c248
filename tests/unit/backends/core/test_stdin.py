"""The code's stdin: the FIFO channel, the prompt a route keeps, and the feeder."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from lmc_runtime.backends import ExecutionOptions
from lmc_runtime.backends.core import Execution, Finished, Output, Route, StdinChannel, feed_stdin
from lmc_runtime.messages import Message
from lmc_runtime.procs import read_available

pytestmark = pytest.mark.anyio

#: Bounds every wait: only a wedge comes near it.
LIMIT = 10.0

#: Echoes each line it reads, then says it saw the end of its input.
_ECHO = "import sys\nfor line in sys.stdin:\n    print('read:' + line, end='', flush=True)\nprint('eof')"


# -- the route ------------------------------------------------------------------------


async def test_a_route_keeps_the_unfinished_last_line_and_signals_output() -> None:
    route = Route(1, "tag")
    assert route.tail == "" and not route.activity.is_set()
    await route.put(Output("first line\nname"))
    assert route.activity.is_set() and route.tail == "name"
    route.activity = anyio.Event()
    await route.put(Output("? ", "stderr"))
    assert route.activity.is_set() and route.tail == "name? "
    await route.put(Output("x" * 1000))
    assert route.tail == "x" * 400
    await route.put(Output("done\n"))
    assert route.tail == ""
    await route.put(Finished())
    assert route.finished.is_set()
    route.close()


# -- the channel ----------------------------------------------------------------------


def _reader(path: Path) -> int:
    """A blocking read end of the FIFO at ``path``, opened without waiting for a writer."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    os.set_blocking(fd, True)
    return fd


def test_a_created_fifo_anyone_may_open_is_removed_on_close(tmp_path: Path) -> None:
    channel = StdinChannel.create(tmp_path / "stdin-1")
    info = channel.path.stat()
    assert stat.S_ISFIFO(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o666
    channel.answer("hello")
    fd = os.open(channel.path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert os.read(fd, 100) == b"hello\n"
    finally:
        os.close(fd)
    channel.close()
    assert channel.closed and not channel.path.exists()
    channel.close()  # idempotent
    channel.answer("dropped")  # nothing once closed


def test_a_writer_needs_a_reader_and_leaves_the_fifo_in_place(tmp_path: Path) -> None:
    path = tmp_path / "stdin"
    StdinChannel.create(path).close()
    os.mkfifo(path)
    with pytest.raises(OSError):
        StdinChannel.writer(path)  # ENXIO: nobody holds the read end
    reader = _reader(path)
    try:
        channel = StdinChannel.writer(path)
        channel.answer("Ada")
        assert os.read(reader, 100) == b"Ada\n"
        channel.close()
        assert path.exists() and os.read(reader, 100) == b""  # end-of-input
    finally:
        os.close(reader)


def test_closing_a_writer_drops_what_the_code_left_unread(tmp_path: Path) -> None:
    path = tmp_path / "stdin"
    os.mkfifo(path)
    reader = _reader(path)
    try:
        channel = StdinChannel.writer(path)
        channel.answer("never read")
        channel.close()
        assert os.read(reader, 100) == b""
    finally:
        os.close(reader)


def test_a_read_with_no_writer_gets_end_of_input_at_once(tmp_path: Path) -> None:
    path = tmp_path / "stdin"
    os.mkfifo(path)
    reader = _reader(path)
    try:
        done = subprocess.run(["cat"], stdin=reader, capture_output=True, timeout=LIMIT)
    finally:
        os.close(reader)
    assert done.returncode == 0 and done.stdout == b""


def test_nobody_reads_a_fresh_fifo_and_a_closed_one_has_no_readers(tmp_path: Path) -> None:
    channel = StdinChannel.create(tmp_path / "stdin-2")
    assert channel.readers(os.getsid(0)) == []
    assert channel.reader_waiting(os.getsid(0)) is False
    channel.close()
    assert channel.reader_waiting(os.getsid(0)) is False


@asynccontextmanager
async def _reading(path: Path, code: str = _ECHO) -> AsyncIterator[subprocess.Popen[bytes]]:
    """A process in a session of its own whose stdin is the FIFO at ``path``."""
    reader = _reader(path)
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=reader,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
    finally:
        os.close(reader)
    try:
        yield child
    finally:
        child.kill()
        child.wait(LIMIT)
        assert child.stdout is not None
        child.stdout.close()


async def _blocked(channel: StdinChannel, session: int) -> None:
    """Return once a process of ``session`` is blocked reading the channel."""
    with anyio.fail_after(LIMIT):
        while not channel.reader_waiting(session):
            await anyio.sleep(0.01)


async def _line(child: subprocess.Popen[bytes]) -> bytes:
    """The next line the child printed."""
    assert child.stdout is not None
    fd = child.stdout.fileno()
    os.set_blocking(fd, False)
    data = b""
    with anyio.fail_after(LIMIT):
        while not data.endswith(b"\n"):
            await anyio.wait_readable(fd)
            data += read_available(fd) or b""
    return data


async def test_a_blocked_reader_of_the_session_is_found(tmp_path: Path) -> None:
    channel = StdinChannel.create(tmp_path / "stdin-3")
    try:
        async with _reading(channel.path) as child:
            await _blocked(channel, child.pid)
            assert channel.readers(child.pid) == [child.pid]
            assert channel.readers(os.getsid(0)) == []  # not in this session
            channel.answer("one")
            assert await _line(child) == b"read:one\n"
    finally:
        channel.close()


# -- the feeder -----------------------------------------------------------------------


class _Run(Execution):
    """A run with no interpreter behind it: interrupts are only counted."""

    def __init__(self, options: ExecutionOptions) -> None:
        super().__init__(cast(Any, None), Route(1, options.reply_to), options)
        self.interrupts = 0

    async def interrupt_code(self) -> None:
        self.interrupts += 1


def _drain(route: Route) -> list[Any]:
    items: list[Any] = []
    while True:
        try:
            items.append(route.receive.receive_nowait())
        except anyio.WouldBlock:
            return items


async def _forward(child: subprocess.Popen[bytes], route: Route) -> None:
    """What the child prints goes to the route, as an interpreter's readers do."""
    assert child.stdout is not None
    fd = child.stdout.fileno()
    os.set_blocking(fd, False)
    while True:
        await anyio.wait_readable(fd)
        data = read_available(fd)
        if data is None:
            return
        await route.put(Output(data.decode()))


async def _until(route: Route, text: str) -> list[Any]:
    """The route's items up to the output that ends with ``text``."""
    items: list[Any] = []
    seen = ""
    while not seen.endswith(text):
        item = await route.receive.receive()
        items.append(item)
        if isinstance(item, Output):
            seen += item.text
    return items


async def _feeding(run: _Run, channel: StdinChannel, child: subprocess.Popen[bytes]) -> str:
    """Feed the child until it ends; all the run's output."""
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            run.stdin_session = child.pid
            tg.start_soon(feed_stdin, run, channel)
            tg.start_soon(_forward, child, run.route)
            items = await _until(run.route, "bye\n")
            await run.route.put(Finished())
    return "".join(item.text for item in items if isinstance(item, Output))


#: Asks twice, then says goodbye.
_ASKS = """\
import sys
for prompt in ("name? ", "again? "):
    print(prompt, end="", flush=True)
    print("read:" + sys.stdin.readline(), end="", flush=True)
print("bye")
"""


async def test_a_waiting_reader_gets_the_callbacks_answers_echoed(tmp_path: Path) -> None:
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return f"answer {len(prompts)}"

    run = _Run(ExecutionOptions("c", on_input=answer))
    channel = StdinChannel.create(tmp_path / "stdin-4")
    try:
        async with _reading(channel.path, _ASKS) as child:
            output = await _feeding(run, channel, child)
    finally:
        channel.close()
    assert prompts == ["name? ", "again? "]
    assert output == "name? answer 1\nread:answer 1\nagain? answer 2\nread:answer 2\nbye\n"
    assert run.interrupts == 0 and run.stop_reason is None


async def test_the_end_of_the_run_ends_the_feeder_without_asking(tmp_path: Path) -> None:
    asked: list[str] = []

    def answer(prompt: str) -> str:
        asked.append(prompt)
        return "x"

    run = _Run(ExecutionOptions("c", on_input=answer))
    channel = StdinChannel.create(tmp_path / "stdin-5")
    try:
        await run.route.put(Finished())
        with anyio.fail_after(LIMIT):
            run.stdin_session = os.getsid(0)
            await feed_stdin(run, channel)
    finally:
        channel.close()
    assert asked == [] and run.interrupts == 0


@pytest.mark.parametrize("slow", [False, True], ids=["failing", "slow"])
async def test_a_failing_or_slow_callback_is_told_and_stops_the_run(
    tmp_path: Path, slow: bool
) -> None:
    async def broken(prompt: str) -> str:
        if slow:
            await anyio.sleep_forever()
        raise RuntimeError("no keyboard here")

    run = _Run(ExecutionOptions("c", on_input=broken, input_timeout=0.2))
    await run.route.put(Output("name? "))
    channel = StdinChannel.create(tmp_path / "stdin-6")
    try:
        async with _reading(channel.path) as child:
            with anyio.fail_after(LIMIT):
                run.stdin_session = child.pid
                await feed_stdin(run, channel)  # returns: it gave up
    finally:
        channel.close()
    assert run.stop_reason == "input" and run.interrupts == 1
    (notice,) = [item for item in _drain(run.route) if isinstance(item, Message)]
    why = "no answer in time" if slow else "no keyboard here"
    assert "input('name? ') could not be answered" in str(notice.content)
    assert why in str(notice.content) and notice.status == "error"


async def test_a_reader_holding_the_fifo_gets_answers_then_end_of_input(tmp_path: Path) -> None:
    """The interpreter holds the read end for its life; a run holds the write end."""
    path = tmp_path / "stdin"
    os.mkfifo(path)
    run = _Run(ExecutionOptions("c", on_input=lambda prompt: "Ada"))
    async with _reading(path, _ASKS) as child:
        channel = StdinChannel.writer(path)
        output = await _feeding(run, channel, child)
        channel.close()
    assert output == "name? Ada\nread:Ada\nagain? Ada\nread:Ada\nbye\n"


async def test_an_answer_too_long_for_the_fifo_stops_the_run(tmp_path: Path) -> None:
    run = _Run(ExecutionOptions("c", on_input=lambda prompt: "x" * 1_000_000))
    channel = StdinChannel.create(tmp_path / "stdin-7")
    try:
        async with _reading(channel.path) as child:
            with anyio.fail_after(LIMIT):
                run.stdin_session = child.pid
                await feed_stdin(run, channel)
    finally:
        channel.close()
    assert run.stop_reason == "input" and run.interrupts == 1
    (notice,) = [item for item in _drain(run.route) if isinstance(item, Message)]
    assert "the answer could not be written" in str(notice.content)
