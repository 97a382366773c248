"""The Python kernel's reader of descriptors 1 and 2 (``kernels/lmc-python/lmc_pipes.py``),
on a stand-in for ipykernel's ``OutStream``: a run waits until what its child
processes left in the pipe was written into the stream, and no longer; a stream
sends what it holds once that passes a message's size."""

from __future__ import annotations

import importlib.util
import inspect
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "kernels" / "lmc-python"
#: Bounds every wait of these tests: only a hang comes near it.
GUARD = 10.0


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_lmc_pipes_under_test", FOLDER / "lmc_pipes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pipes = _load()


class Stream:
    """What :func:`lmc_pipes.watch` uses of an ``OutStream``; each write waits until
    ``slow`` is set (``slow_for`` seconds at most), as a thread held up would."""

    def __init__(self, slow_for: float = 0.0) -> None:
        self._fid, self.writer = os.pipe()
        self._original_stdstream_copy = os.open(os.devnull, os.O_WRONLY)
        self._should_watch = True
        self._exc = None
        self.slow, self.slow_for = threading.Event(), slow_for
        self.text: list[str] = []
        self.thread = threading.Thread(target=pipes.watch, args=(self,), daemon=True)

    def write(self, text: str) -> int:
        if self.slow_for:
            self.slow.wait(self.slow_for)
        self.text.append(text)
        return len(text)

    def close(self) -> None:
        self._should_watch = False
        self.slow.set()
        os.write(self.writer, b"\0")  # wakes the watcher, as OutStream.close does
        self.thread.join(GUARD)
        for fd in (self._fid, self.writer, self._original_stdstream_copy):
            os.close(fd)


@pytest.fixture
def held() -> Iterator[Stream]:
    """A stream whose watcher hands what it read over 0.2 s late."""
    stream = Stream(slow_for=0.2)
    stream.thread.start()
    yield stream
    stream.close()


def test_a_run_waits_until_what_the_pipe_held_is_in_the_stream(held: Stream) -> None:
    """Regression: the run ended while its child's output was still being read."""
    os.write(held.writer, "from-child \u00e9\n".encode())
    assert pipes.settle([held])
    assert "".join(held.text) == "from-child \u00e9\n"


def test_the_wait_is_bounded(held: Stream) -> None:
    held.slow_for = GUARD  # the watcher hands nothing over while the wait lasts
    os.write(held.writer, b"x\n")
    assert not pipes.settle([held], bound=0.05)
    held.slow.set()


def test_a_writer_that_never_stops_does_not_hold_a_run_up() -> None:
    """Only what the pipe held as the run ended is waited for, not its end."""
    stream = Stream()
    stream.thread.start()
    stop = threading.Event()

    def flood() -> None:
        while not stop.is_set():
            os.write(stream.writer, b"y\n" * 4096)

    writer = threading.Thread(target=flood, daemon=True)
    writer.start()
    try:
        for _ in range(5):
            assert pipes.settle([stream], bound=GUARD)
    finally:
        stop.set()
        writer.join(GUARD)
        stream.close()


def test_a_stream_not_watched_is_not_waited_for() -> None:
    stream = Stream()  # its watcher never runs
    os.write(stream.writer, b"x\n")
    stream._should_watch = False
    assert pipes.settle([stream], bound=GUARD)
    stream.thread.start()
    stream.close()


def test_a_stream_sends_what_it_holds_once_it_passes_the_message_size() -> None:
    """Regression: ipykernel sent 0.2 s of a ``print`` loop as one message of 10 to
    30 MiB, which the host read whole, a few at a time."""

    class Out:
        def __init__(self) -> None:
            self.held: list[str] = []
            self.sent: list[str] = []

        def write(self, string: str) -> int:
            self.held.append(string)
            return len(string)

        def flush(self) -> None:
            self._flush()

        def _flush(self) -> None:
            self.sent.append("".join(self.held))
            self.held.clear()

    pipes.install(Out, type("Kernel", (), {}))
    out = Out()
    line = "x" * 1023 + "\n"
    for _ in range(3 * pipes.MESSAGE_TEXT // len(line)):
        assert out.write(line) == len(line)
    assert [len(message) for message in out.sent] == [pipes.MESSAGE_TEXT] * 3
    assert not out.held


def test_install_replaces_the_watcher_and_wraps_do_execute_once() -> None:
    class Out:
        def _watch_pipe_fd(self) -> None:
            raise AssertionError("ipykernel's own")

        def write(self, string: str) -> int:
            return len(string)

        def _flush(self) -> None:
            pass

    class Kernel:
        async def do_execute(self, code: str, silent: bool, *, cell_id: str | None = None) -> str:
            return code

    pipes.install(Out, Kernel)
    wrapped, written = Kernel.do_execute, Out.write
    pipes.install(Out, Kernel)
    assert Out._watch_pipe_fd is pipes.watch
    assert Kernel.do_execute is wrapped and Out.write is written
    # ipykernel passes ``cell_id`` only to a do_execute that names it
    assert "cell_id" in inspect.signature(Kernel.do_execute).parameters


class Held:
    """ipykernel's ``OutStream`` as the flush reads it: text held per parent in
    ``_buffers`` under ``_buffer_lock``, ``_flush_pending`` once a send is asked;
    ``flush`` waits for the IOPub thread (counted in ``waits``), whose send
    (``_flush``) can be held up mid-way (``slow``)."""

    def __init__(self, slow: bool = False) -> None:
        from collections import defaultdict
        from io import StringIO

        self._buffer_lock = threading.RLock()
        self._buffers: defaultdict[object, StringIO] = defaultdict(StringIO)
        self._flush_pending = False
        self.waits = 0
        self.sent: list[str] = []
        self.slow, self.sending, self.release = slow, threading.Event(), threading.Event()

    def write(self, string: str) -> int:
        with self._buffer_lock:
            self._buffers["run"].write(string)
        return len(string)

    def flush(self) -> None:
        self.waits += 1
        self._flush()

    def _flush(self) -> None:
        with self._buffer_lock:
            buffers, self._buffers = (
                self._buffers,
                type(self._buffers)(self._buffers.default_factory),
            )
        if self.slow:
            self.sending.set()
            self.release.wait(GUARD)
        self.sent.extend(buffer.getvalue() for buffer in buffers.values())


def test_a_flush_with_nothing_to_send_does_not_wait_for_the_iopub_thread() -> None:
    """Guards the saved waits: ipykernel flushes stdout and stderr before a run's
    reply and after it, four waits for the IOPub thread (some 0.2 ms each), where
    only one has text; now the ones with nothing to send return at once."""
    pipes.install(Held, type("Kernel", (), {}))
    out = Held()
    out.flush()
    assert out.waits == 0
    out.write("1\n")
    out.flush()
    assert out.waits == 1 and out.sent == ["1\n"]
    out.flush()
    assert out.waits == 1


def test_a_flush_waits_while_a_send_is_asked_or_under_way() -> None:
    """What was taken from the stream but not sent yet is still waited for: a send
    asked (``_flush_pending``), or one running in the IOPub thread."""
    pipes.install(Held, type("Kernel", (), {}))
    out = Held(slow=True)
    out._flush_pending = True
    out.release.set()
    out.flush()
    assert out.waits == 1
    out._flush_pending, out.slow = False, True
    out.sending.clear()
    out.release.clear()
    out.write("1\n")
    iopub = threading.Thread(target=out._flush)  # the IOPub thread's send, held up
    iopub.start()
    try:
        assert out.sending.wait(GUARD)
        assert not any(buffer.tell() for buffer in out._buffers.values())  # taken
        out.slow = False  # this flush's own send goes through at once
        out.flush()
        assert out.waits == 2
    finally:
        out.release.set()
        iopub.join(GUARD)
