"""Answering a cell that waits for input, with the caller's input callback.

A program reading stdin announces nothing. So the feeder waits for the output
to go quiet (any output restarts the wait), then asks ``/proc`` once whether a
process of the shell's session is blocked reading the cell's stdin FIFO; if
not, it waits again, twice as long each time, up to a second. When one is,
the callback gets the last unfinished output line as the prompt, and its
answer is written to the FIFO and echoed in the output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ... import replies
from ..inputs import call_input
from ..turns import first_of

if TYPE_CHECKING:
    from .execution import ShellExecution

__all__ = ["InputFeeder"]

#: Quiet time before the first look, and the longest wait between looks.
_QUIET = 0.1
_LONGEST = 1.0
_PROMPT_LIMIT = 400


class InputFeeder:
    """Feeds one execution's stdin FIFO from its ``on_input`` callback."""

    def __init__(self, execution: ShellExecution) -> None:
        self._run = execution
        self._activity = anyio.Event()
        self._tail = b""

    def saw_output(self, data: bytes) -> None:
        """The code printed ``data``: keep its unfinished last line, restart the wait."""
        cut = data.rfind(b"\n")
        self._tail = data[cut + 1 :] if cut >= 0 else (self._tail + data)[-_PROMPT_LIMIT:]
        self._activity.set()

    async def run(self) -> None:
        """Until the cell is done: wait for quiet, look for a blocked reader, answer it."""
        run = self._run
        delay = _QUIET
        while not run.finished.is_set():
            self._activity = anyio.Event()
            with anyio.move_on_after(delay):
                await first_of(self._activity, run.finished)
            if run.finished.is_set():
                return
            if self._activity.is_set():
                delay = _QUIET
                continue
            waiting = await anyio.to_thread.run_sync(run.stdin.reader_waiting, run.proc.pid)
            if not waiting:
                delay = min(delay * 2, _LONGEST)
                continue
            if not await self._answer():
                return
            delay = _QUIET

    async def _answer(self) -> bool:
        run = self._run
        prompt = self._tail.decode("utf-8", "replace")
        callback = run.options.on_input
        assert callback is not None
        failure: str | None = None
        value = ""
        with anyio.CancelScope() as scope:
            try:
                with anyio.fail_after(run.options.input_timeout):
                    value = await call_input(callback, prompt)
                value.encode("utf-8")
            except TimeoutError:
                failure = "no answer in time"
            except Exception as exc:
                failure = repr(exc)
        if scope.cancelled_caught or run.finished.is_set():
            return False
        if failure is not None:
            await run.put_message(
                replies.notice(
                    f"input({prompt!r}) could not be answered: {failure}", "error", run.reply_to
                )
            )
            await run.request_stop("input")
            return False
        run.stdin.answer(value)
        self._tail = b""
        await run.put_message(replies.output(value + "\n", run.reply_to))
        return True
