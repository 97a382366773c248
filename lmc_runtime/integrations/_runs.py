"""What the framework integrations share: the computer they drive, one run of code
on it collected into an :class:`Outcome`, and the missing-extra check.

A computer opened with ``async with`` in the caller's event loop runs code there,
through ``arun``. Any other (opened sync, or not opened yet) runs through its own
sync layer: ``run`` opens it in a blocking portal if needed, and an async caller
reads it from a worker thread. Either way every message is handed to an optional
callback as it arrives, and a run the caller leaves early is stopped.
"""

from __future__ import annotations

import functools
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Protocol, Unpack

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..arguments import MessageInput, RunOptions
from ..errors import UsageError
from ..execution import LanguageStatus
from ..messages import Message

__all__ = ["AsyncRunner", "ComputerLike", "Outcome", "collect", "describe_languages"]

#: The statuses of code that never reached an interpreter: its one reply's.
NOT_RUN = frozenset({"not_understood", "malformed", "unavailable"})

#: Exit codes for runs that end without one of their own (a shell's is kept).
_EXIT_CODES = {"ok": 0, "timeout": 124, "interrupted": 130}

OnMessage = Callable[[Message], None]
AsyncOnMessage = Callable[[Message], Awaitable[None]]


class ComputerLike(Protocol):
    """What the integrations need of a computer: :class:`~lmc_runtime.Computer`
    and :class:`~lmc_runtime.remote.RemoteComputer` both have it."""

    @property
    def languages(self) -> Mapping[str, LanguageStatus]: ...

    def run(
        self, message: MessageInput, code: str | None = None, **options: Unpack[RunOptions]
    ) -> Iterator[Message]: ...

    def arun(
        self, message: MessageInput, code: str | None = None, **options: Unpack[RunOptions]
    ) -> AsyncGenerator[Message, None]: ...

    def interrupt(self, language: str | None = None) -> None: ...

    def restart(self, language: str) -> None: ...

    async def ainterrupt(self, language: str | None = None) -> None: ...

    async def arestart(self, language: str) -> None: ...


@dataclass(frozen=True)
class Outcome:
    """Every message one run streamed, and what the frameworks read from them."""

    messages: tuple[Message, ...]

    @property
    def status(self) -> str:
        """The final message's ``extras.status`` (``ok``, ``error``, ``timeout``...);
        for code that never ran, its one reply's (``not_understood``...)."""
        last = self.messages[-1] if self.messages else None
        status = last.status if last is not None else None
        if last is not None and (last.is_final or status in NOT_RUN):
            return status or "aborted"
        return "aborted"

    @property
    def ran(self) -> bool:
        """Whether the code reached an interpreter."""
        return self.status not in NOT_RUN

    @property
    def ok(self) -> bool:
        """Whether the code ran to its end without an error."""
        return self.status == "ok"

    @property
    def exit_code(self) -> int:
        """The shell's exit code when it gave one; else 0 for ``ok``, 124 for a
        timeout, 130 for an interrupt and 1 for any other end."""
        final = self.messages[-1] if self.messages else None
        code = (final.extras or {}).get("exit_code") if final is not None else None
        if isinstance(code, int) and not isinstance(code, bool):
            return code
        return _EXIT_CODES.get(self.status, 1)

    @property
    def text(self) -> str:
        """All console output in order: stdout, stderr, results, tracebacks, notes."""
        return "".join(
            m.content
            for m in self.messages
            if m.type == "console" and m.format == "output" and isinstance(m.content, str)
        )

    @property
    def images(self) -> list[Message]:
        """The base64 images (plots, displays), in order."""
        return [
            m
            for m in self.messages
            if m.type == "image" and m.format != "path" and isinstance(m.content, str)
        ]


def describe_languages(computer: ComputerLike) -> str:
    """The languages that run on ``computer``, with their aliases, for a model to read."""
    names = []
    for status in computer.languages.values():
        if status.available:
            aliases = f" ({', '.join(status.aliases)})" if status.aliases else ""
            names.append(status.name + aliases)
    return ", ".join(names) or "none"


def _options(timeout: float | None) -> RunOptions:
    return {} if timeout is None else {"timeout": timeout}


def collect(
    computer: ComputerLike,
    language: str,
    code: str,
    *,
    timeout: float | None = None,
    on_message: OnMessage | None = None,
) -> Outcome:
    """Run ``code`` through the computer's sync layer; ``on_message`` sees each message.

    An exception out of ``on_message`` (or a Ctrl-C) closes the run, which stops the code.
    """
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
    computer's own)."""

    def __init__(self, computer: ComputerLike, *, timeout: float | None = None) -> None:
        self.computer = computer
        self.timeout = timeout
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
        """Restart ``language``'s interpreter, in the way the last run reached it."""
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
