"""What child processes write to an lmc-runtime Python kernel's descriptors 1 and 2.

ipykernel points descriptors 1 and 2 at pipes, and a thread of each stream
(``OutStream._watch_pipe_fd``) reads its pipe and writes what it read into the
stream. Two things are done differently here (:func:`install`):

- **whole characters**: one UTF-8 decoder serves the whole pipe, so a character
  split between two writes stays whole (ipykernel decodes each read alone, which
  turns its halves into two replacement characters);
- **the run's own output**: a run's reply waits (at most :data:`SETTLE_BOUND`
  seconds) until what its child processes left in the pipes has been read and
  written into the streams, which ipykernel flushes before the reply. The run
  could end before the thread had read it: the output came after the reply, as
  the next run's (regression: ``echo`` from ``subprocess.run``, about 1 in 1,000
  runs on a loaded machine).

The wait is cheap when nothing was left: a lock and a ``FIONREAD`` per stream.
A process that keeps writing after the run (a background job) does not hold the
reply up: only what was in the pipe when the run ended is waited for.

A stream's ``flush`` waits for the IOPub thread only when the stream holds text
or a send of it is on its way (ipykernel flushes both streams before a run's
reply and again after it: four waits for that thread, where one has text).

And a stream sends what it holds once that passes :data:`MESSAGE_TEXT`
characters, not only every 0.2 s: a ``print`` loop made messages of 10 to 30 MiB,
which the host holds a few of at a time while it reads them (see
``lmc_runtime/backends/jupyter/channels.py``).

Stdlib only, besides what the kernel has imported; loaded by its file name.
"""

import codecs
import fcntl
import functools
import os
import select
import struct
import sys
import termios
import threading
import time
from typing import Any

#: The longest a run's reply waits for its child processes' output to be read.
SETTLE_BOUND = 1.0
#: The largest read from a pipe.
_READ = 1 << 16
#: A stream that holds this much text sends it (characters; one write may pass it).
MESSAGE_TEXT = 1 << 20


class _Pipe:
    """What a stream's watcher has read from its pipe, and how much of it it has
    written into the stream (``handed``); ``changed`` is notified as that grows.
    A read is counted under ``changed``'s lock, so that bytes are always either in
    the pipe (``FIONREAD``) or counted in ``read``."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.read = 0
        self.handed = 0


def _pipe_of(stream: Any) -> _Pipe:
    """The bookkeeping of ``stream``'s pipe (made by whichever thread asks first)."""
    return stream.__dict__.setdefault("_lmc_pipe", _Pipe())  # type: ignore[no-any-return]


def watch(stream: Any) -> None:
    """``OutStream._watch_pipe_fd``: each read goes to the stream as text (one
    decoder for the whole pipe), then on to the original descriptor."""
    fid = stream._fid
    if fid is None:
        return
    pipe = _pipe_of(stream)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    poller = select.poll()
    poller.register(fid, select.POLLIN)
    try:
        while stream._should_watch:
            poller.poll()  # readable: the read below does not block (the only reader)
            with pipe.changed:
                data = os.read(fid, _READ)
                pipe.read += len(data)
            if not data or not stream._should_watch:
                break  # closed: ``OutStream.close`` wakes the watcher with a byte
            try:
                text = decoder.decode(data)
                if text:
                    stream.write(text)
            finally:
                with pipe.changed:
                    pipe.handed += len(data)
                    pipe.changed.notify_all()
            os.write(stream._original_stdstream_copy, data)
    except Exception:
        stream._exc = sys.exc_info()


def _unread(fid: int) -> int:
    """How many bytes the pipe ``fid`` holds unread."""
    held = fcntl.ioctl(fid, termios.FIONREAD, b"\0\0\0\0")
    return int(struct.unpack("i", held)[0])


def settle(streams: Any, bound: float = SETTLE_BOUND) -> bool:
    """Wait until what the pipes of ``streams`` hold now was written into them, at
    most ``bound`` seconds in all; whether it was. An interrupt ends the wait."""
    deadline = None
    try:
        for stream in streams:
            fid = getattr(stream, "_fid", None)
            if fid is None or not getattr(stream, "_should_watch", False):
                continue
            pipe = _pipe_of(stream)
            with pipe.changed:
                target = pipe.read + _unread(fid)
                while pipe.handed < target:
                    now = time.monotonic()
                    deadline = now + bound if deadline is None else deadline
                    if now >= deadline:
                        return False
                    pipe.changed.wait(deadline - now)
    except (OSError, KeyboardInterrupt):
        return False
    return True


def _settled_first(do_execute: Any) -> Any:
    """``do_execute`` that returns once the run's child processes' output is in the
    streams: ipykernel's ``execute_request`` flushes them, then sends the reply."""

    @functools.wraps(do_execute)
    async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await do_execute(self, *args, **kwargs)
        finally:
            settle((sys.stdout, sys.stderr))

    run._lmc_settles = True  # type: ignore[attr-defined]
    return run


def _sent_when_large(write: Any, flush: Any) -> tuple[Any, Any]:
    """``OutStream.write`` that sends what the stream holds once it passes
    :data:`MESSAGE_TEXT`, and ``OutStream._flush`` that counts from nothing again.
    The count is the writes' since the last send (roughly, across threads)."""

    @functools.wraps(write)
    def written(self: Any, string: str) -> Any:
        done = write(self, string)
        held = self.__dict__.get("_lmc_held", 0) + len(string)
        self._lmc_held = held
        if held >= MESSAGE_TEXT:
            self.flush()
        return done

    @functools.wraps(flush)
    def sent(self: Any) -> Any:
        self._lmc_held = 0
        self._lmc_flushing = self.__dict__.get("_lmc_flushing", 0) + 1  # under the GIL
        try:
            return flush(self)
        finally:
            self._lmc_flushing -= 1

    written._lmc_bounded = sent._lmc_bounded = True  # type: ignore[attr-defined]
    return written, sent


def _holds(stream: Any) -> bool:
    """Whether ``stream`` has text to send, or a send of it is asked or under way."""
    if stream.__dict__.get("_lmc_flushing", 0) or getattr(stream, "_flush_pending", True):
        return True
    with stream._buffer_lock:
        return any(buffer.tell() for buffer in stream._buffers.values())


def _waits_only_for_text(flush: Any) -> Any:
    """``OutStream.flush`` that returns at once when the stream holds nothing and
    no send of it is on its way: it waits for the IOPub thread only to send text.
    Regression: a run's end flushed stdout and stderr twice each, four waits for
    the IOPub thread (some 0.2 ms each), three of them with nothing to send."""

    @functools.wraps(flush)
    def flushed(self: Any) -> Any:
        try:
            holds = _holds(self)
        except AttributeError:  # an ipykernel whose stream is not as read here
            holds = True
        return flush(self) if holds else None

    flushed._lmc_waits_for_text = True  # type: ignore[attr-defined]
    return flushed


def install(out_stream: Any, kernel_class: Any) -> None:
    """``out_stream``'s pipes are read by :func:`watch`, its messages are bounded
    (:data:`MESSAGE_TEXT`), and ``kernel_class``'s runs end once what their child
    processes wrote was read (:func:`settle`). On the classes, so a kernel revived
    from a checkpoint's image has it too."""
    if callable(getattr(out_stream, "_watch_pipe_fd", None)):
        out_stream._watch_pipe_fd = watch
    write, flush = getattr(out_stream, "write", None), getattr(out_stream, "_flush", None)
    if callable(write) and callable(flush) and not getattr(write, "_lmc_bounded", False):
        out_stream.write, out_stream._flush = _sent_when_large(write, flush)
    public = getattr(out_stream, "flush", None)
    if callable(public) and not getattr(public, "_lmc_waits_for_text", False):
        out_stream.flush = _waits_only_for_text(public)
    do_execute = getattr(kernel_class, "do_execute", None)
    if callable(do_execute) and not getattr(do_execute, "_lmc_settles", False):
        kernel_class.do_execute = _settled_first(do_execute)
