"""A cell's ``input()`` answered by the caller's callback. An announced request
comes twice (stdin, and a copy on IOPub): the n-th is answered on whichever
channel brings it first; its echo waits for the IOPub copy, ordered with the output."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import anyio

from ... import replies
from ...messages import Message
from ...replies import Status
from ..base import ExecutionOptions
from ..inputs import call_input
from .items import InputRequest

__all__ = ["InputAnswers"]


class InputAnswers:
    """The input requests of one execution, their answers and their echoes."""

    def __init__(self, options: ExecutionOptions) -> None:
        self._options = options
        self._requests: dict[str, int] = {}
        self._answered = 0
        self._echoes: dict[int, Message] = {}
        self._scope: anyio.CancelScope | None = None

    def cancel(self) -> None:
        """Abandon a callback still thinking (the code is being stopped)."""
        if self._scope is not None:
            self._scope.cancel()

    def pending_echoes(self) -> list[Message]:
        """Echoes whose IOPub copy never came, in order; sent before the end."""
        echoes = [self._echoes[n] for n in sorted(self._echoes)]
        self._echoes.clear()
        return echoes

    async def _ask(self, prompt: str) -> tuple[str | None, str | None, bool]:
        """(the line, why there is none, whether the asking was cancelled)."""
        callback = self._options.on_input
        assert callback is not None  # allow_stdin is only set with a callback
        value: str | None = None
        failure: str | None = None
        with anyio.CancelScope() as scope:
            # An interrupt or the deadline cancels a slow callback (the watchdog's
            # SIGINT already made the kernel's input() raise).
            self._scope = scope
            try:
                with anyio.fail_after(self._options.input_timeout):
                    value = await call_input(callback, prompt)
                value.encode("utf-8")
            except TimeoutError:
                failure = "no answer in time"
            except Exception as exc:
                failure = repr(exc)
            finally:
                self._scope = None
        return value, failure, scope.cancelled_caught

    async def answer(
        self,
        request: InputRequest,
        stopping: Callable[[], bool],
        stop: Callable[[str], Awaitable[None]],
    ) -> AsyncIterator[Message]:
        """Answer one copy of a request; yield what the caller should see."""
        reply_to = self._options.reply_to
        channel = request.channel
        number = self._requests[channel] = self._requests.get(channel, 0) + 1
        if number <= self._answered:
            if channel == "iopub" and number in self._echoes:
                yield self._echoes.pop(number)
            return
        self._answered += 1
        prompt = str(request.content.get("prompt", ""))
        value, failure, cancelled = await self._ask(prompt)
        if cancelled or stopping():
            return
        if failure is not None or value is None:
            yield replies.notice(
                f"input({prompt!r}) could not be answered: {failure}", Status.ERROR, reply_to
            )
            await stop("input")
            return
        request.answer(value)
        shown = "*" * len(value) if request.content.get("password") else value
        echo = replies.output(f"{prompt}{shown}\n", reply_to)
        if channel == "iopub" or not request.announced:
            yield echo
        else:
            self._echoes[number] = echo
