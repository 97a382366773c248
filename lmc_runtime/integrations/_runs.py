"""How the framework integrations run code: one run on a computer collected into
an :class:`~._outcome.Outcome`, from sync code (:func:`collect`) or async code
(:class:`AsyncRunner`).

A computer opened with ``async with`` in the caller's event loop runs code there,
through ``arun``. Any other (opened sync, or not opened yet) runs through its own
sync layer: ``run`` opens it in a blocking portal if needed, and an async caller
reads it from a worker thread. Either way every message is handed to an optional
callback as it arrives, a run the caller leaves early is stopped, and the runs
that share a :class:`~._lock.RunLock` go one at a time (a remote session runs
one at a time, and refuses a second).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Awaitable, Callable, Iterator
from contextlib import aclosing

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..arguments import RunOptions
from ..errors import UsageError
from ..messages import Message
from ._lock import RunLock
from ._outcome import ComputerLike, Outcome, canonical, describe_languages

__all__ = [
    "AsyncRunner",
    "ComputerLike",
    "Outcome",
    "RunLock",
    "canonical",
    "collect",
    "describe_languages",
]

OnMessage = Callable[[Message], None]
AsyncOnMessage = Callable[[Message], Awaitable[None]]


def _options(timeout: float | None) -> RunOptions:
    return {} if timeout is None else {"timeout": timeout}


def collect(
    computer: ComputerLike,
    language: str,
    code: str,
    *,
    timeout: float | None = None,
    on_message: OnMessage | None = None,
    lock: RunLock | None = None,
) -> Outcome:
    """Run ``code`` through the computer's sync layer; ``on_message`` sees each message.
    With ``lock``, the run waits for the lock and holds it to its end.

    An exception out of ``on_message`` (or a Ctrl-C) closes the run, which stops the code.
    """
    with (lock or RunLock()).held():
        messages: list[Message] = []
        stream = computer.run(language, code, **_options(timeout))
        try:
            for message in stream:
                messages.append(message)
                if on_message is not None:
                    on_message(message)
        finally:
            _close(stream)
    return Outcome(tuple(messages))


def _close(stream: Iterator[Message]) -> None:
    close = getattr(stream, "close", None)
    if callable(close):
        close()


class AsyncRunner:
    """Runs code on ``computer`` from async code, in the way the computer is open:
    in this event loop if it was opened here with ``async with``, else through its
    sync layer from a worker thread. ``timeout`` bounds each run (None: the
    computer's own). Runs and restarts wait for ``lock`` (by default one of the
    runner's own), so they go one at a time."""

    def __init__(
        self, computer: ComputerLike, *, timeout: float | None = None, lock: RunLock | None = None
    ) -> None:
        self.computer = computer
        self.timeout = timeout
        self.lock = lock or RunLock()
        self._in_loop = False

    async def run(
        self,
        language: str,
        code: str,
        *,
        on_message: AsyncOnMessage | None = None,
        stop: anyio.Event | None = None,
    ) -> Outcome:
        """Run ``code``; ``on_message`` is awaited for each message.

        Setting ``stop`` interrupts the code; the run is still read to its end, so
        the outcome says how it ended. Cancelling the caller stops the code too.
        """
        async with self.lock.aheld():
            return await self._run(language, code, on_message, stop)

    async def _run(
        self,
        language: str,
        code: str,
        on_message: AsyncOnMessage | None,
        stop: anyio.Event | None,
    ) -> Outcome:
        options = _options(self.timeout)
        try:
            stream = await anyio.to_thread.run_sync(
                functools.partial(self.computer.run, language, code, **options)
            )
        except UsageError:  # open in async code: run it in this event loop
            self._in_loop = True
            return await _in_loop(self.computer, language, code, options, on_message, stop)
        self._in_loop = False
        return await _through_thread(self.computer, language, stream, on_message, stop)

    async def restart(self, language: str) -> None:
        """Restart ``language``'s interpreter, in the way the last run reached it,
        once no run holds the lock."""
        async with self.lock.aheld():
            if self._in_loop:
                await self.computer.arestart(language)
            else:
                await anyio.to_thread.run_sync(self.computer.restart, language)


async def _interrupt_on(stop: anyio.Event | None, interrupt: Callable[[], Awaitable[None]]) -> None:
    if stop is not None:
        await stop.wait()
        await interrupt()


async def _in_loop(
    computer: ComputerLike,
    language: str,
    code: str,
    options: RunOptions,
    on_message: AsyncOnMessage | None,
    stop: anyio.Event | None,
) -> Outcome:
    messages: list[Message] = []
    # The computer's arun stops the code itself when its stream is closed early.
    async with (
        anyio.create_task_group() as tg,
        aclosing(computer.arun(language, code, **options)) as stream,
    ):
        tg.start_soon(_interrupt_on, stop, functools.partial(computer.ainterrupt, language))
        async for message in stream:
            messages.append(message)
            if on_message is not None:
                await on_message(message)
        tg.cancel_scope.cancel()
    return Outcome(tuple(messages))


def _pump(stream: Iterator[Message], send: MemoryObjectSendStream[Message]) -> None:
    """In a worker thread: each message of the sync run into ``send``, until its end
    or until the reader is gone (then closing the run stops the code)."""
    with send:
        try:
            for message in stream:
                anyio.from_thread.run_sync(send.send_nowait, message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            _close(stream)


async def _through_thread(
    computer: ComputerLike,
    language: str,
    stream: Iterator[Message],
    on_message: AsyncOnMessage | None,
    stop: anyio.Event | None,
) -> Outcome:
    interrupt = functools.partial(anyio.to_thread.run_sync, computer.interrupt, language)
    send, receive = anyio.create_memory_object_stream[Message](math.inf)
    messages: list[Message] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, _pump, stream, send)
        tg.start_soon(_interrupt_on, stop, interrupt)
        try:
            async with receive:
                async for message in receive:
                    messages.append(message)
                    if on_message is not None:
                        await on_message(message)
        except BaseException:
            # The caller left (cancelled, or its callback failed): stop the code,
            # which ends the run the worker thread reads.
            if not (messages and messages[-1].is_final):
                with anyio.CancelScope(shield=True):
                    await interrupt()
            raise
        tg.cancel_scope.cancel()
    return Outcome(tuple(messages))
