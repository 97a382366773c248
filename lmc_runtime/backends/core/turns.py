"""One execution at a time on a session, and the wording shared by the backends.

The turn ends when the *interpreter* is done with a run (``on_finished``), not
when the caller has read it all: a caller that stops reading never wedges the
session; one that leaves early stops the code.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Mapping
from contextlib import aclosing
from typing import Any, Generic, Protocol, TypeVar

import anyio

from ... import replies
from ...messages import Message
from .items import Gone

__all__ = [
    "INTERRUPT_ERRORS",
    "Once",
    "Run",
    "Turns",
    "first_of",
    "gone_text",
    "interrupts_own",
    "news_between_runs",
    "stop_phrase",
    "without_echo",
]


class Once:
    """Calls ``func`` the first time it is called, and never again."""

    def __init__(self, func: Callable[[], None]) -> None:
        self._func: Callable[[], None] | None = func

    def __call__(self) -> None:
        func, self._func = self._func, None
        if func is not None:
            func()


async def first_of(*events: anyio.Event) -> None:
    """Return as soon as any of ``events`` is set."""
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)


class Run(Protocol):
    """One execution in flight, as :class:`Turns` drives it (see :class:`~.execution.Execution`)."""

    @property
    def complete(self) -> bool: ...

    async def watch(self) -> None: ...

    def messages(self) -> AsyncGenerator[Message, None]: ...

    async def request_stop(self, reason: str) -> None: ...

    def abandon(self) -> None: ...


R = TypeVar("R", bound=Run)

Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]


class Turns(Generic[R]):
    """The turn-taking of one session; ``spawn`` runs a background task for it."""

    def __init__(self, spawn: Spawn) -> None:
        self._spawn = spawn
        self._busy = anyio.Semaphore(1, fast_acquire=True)
        self.current: R | None = None

    async def take(
        self,
        news: Callable[[], AsyncGenerator[Message, None]],
        begin: Callable[[Callable[[], None]], Awaitable[R]],
    ) -> AsyncGenerator[Message, None]:
        """Wait for the turn, yield ``news()``, then run ``begin(free)``'s execution.

        ``begin`` starts the execution and must arrange for ``free`` to be
        called once the interpreter is done with it (its ``on_finished``).
        """
        await self._busy.acquire()
        free = Once(self._busy.release)
        watching = False
        run: R | None = None
        try:
            # Each closed here when the caller stops early, not left to the garbage
            # collector (whose finalizer costs a task and a wakeup of the loop).
            async with aclosing(news()) as told:
                async for message in told:
                    yield message
            run = await begin(free)
            self.current = run
            self._spawn(run.watch)
            watching = True
            async with aclosing(run.messages()) as messages:
                async for message in messages:
                    yield message
        finally:
            if self.current is run:
                self.current = None
            if run is not None and not run.complete:
                # The caller stopped listening: stop the code too; the watchdog
                # frees the session once the interpreter is done or restarted.
                # What the code still prints is dropped: a full buffer nobody
                # reads must never block the reader that serves every request.
                run.abandon()
                with anyio.CancelScope(shield=True):
                    await run.request_stop("interrupt")
            if not watching:
                free()

    async def interrupt(self) -> None:
        """Stop the current execution, if any."""
        run = self.current
        if run is not None:
            await run.request_stop("interrupt")


def news_between_runs(
    reply_to: str,
    *,
    death: Gone | None,
    late: list[tuple[str, str, str]],
    dropped: int,
    who: str = "it",
) -> list[Message]:
    """What happened since the last run: the ``death`` of an idle interpreter (or the
    restart that ended a run whose caller had left), ``late`` output (tag, stream,
    text), ``dropped`` late bytes."""
    news: list[Message] = []
    if death is not None:
        text = f"Since the last run: {death.description}; its state was lost."
        if not death.intentional:
            text = f"Since the last run, {death.description}. Its state was lost; "
            text += f"{who} has been restarted."
        news.append(
            replies.notice(text, death.status, reply_to, state_lost=True, exit_code=death.exit_code)
        )
    for tag, stream, text in late:
        extras = {"stream": stream} if stream == "stderr" else {}
        news.append(replies.output(text, tag, late=True, **extras))
    if dropped:
        news.append(
            replies.notice(
                f"{dropped} bytes of late output from earlier code were dropped.",
                "truncated",
                reply_to,
                omitted_bytes=dropped,
            )
        )
    return news


_STOP_WORDS = {
    "timeout": "timed out",
    "interrupt": "was interrupted",
    "input": "was interrupted because its input() got no answer",
}


def stop_phrase(reason: str, timeout: float | None, line: int | None) -> str:
    """ "Execution timed out after 2 s at line 3", for a notice about a stopped run."""
    word = _STOP_WORDS[reason]
    if reason == "timeout":
        word += f" after {timeout:g} s"
    where = f" at line {line}" if line is not None else ""
    return f"Execution {word}{where}"


#: The errors, by name, that an interrupt raises in the code; when the runtime
#: interrupted the code on its own, the stop's notice stands for them.
INTERRUPT_ERRORS = frozenset({"KeyboardInterrupt"})
#: The stops the runtime makes on its own (a caller's ``interrupt()`` is not one).
_OWN_STOPS = frozenset({"timeout", "input"})


def interrupts_own(stop_reason: str | None, extras: Mapping[str, Any] | None) -> bool:
    """Whether ``extras`` (of an error, or of the final message) name the error the
    runtime's own interrupt (a timeout, an input() left unanswered) raised in the
    code, Python's KeyboardInterrupt traceback: it is left out, so that the run
    does not look like the code failed; the stop's notice says what happened."""
    return stop_reason in _OWN_STOPS and (extras or {}).get("error") in INTERRUPT_ERRORS


def gone_text(gone: Gone, who: str, where: str, outcome: str | None) -> str:
    """What the notice of a run whose interpreter went away says; ``outcome``: what
    became of the interpreter (None when its end was asked for)."""
    if gone.intentional:
        text = f"{gone.description}; {who}'s state was lost."
    elif gone.by_code:
        text = f"The code {gone.description}{where}: {who} was restarted and its state was lost."
    else:
        text = f"{who[:1].upper()}{who[1:]} died{where}: {gone.description}. "
        text += f"State lost; {outcome}."
    if gone.detail:
        text += f"\n{gone.detail}"
    return text


def without_echo(text: str, echo: str) -> tuple[str, bool]:
    """``text`` without the ``echo`` an interpreter writes after the code it ran was
    interrupted, if ``text`` is that echo or ends with it after a line end; and
    whether it was there."""
    if text == echo:
        return "", True
    if text.endswith("\n" + echo):
        return text[: -len(echo)], True
    return text, False
