"""The loop of one Jupyter execution, after nbclient.

Send ``execute_request``; read this request's route (IOPub, shell and stdin
messages whose parent is our ``msg_id``) until both ``status: idle`` and the
``execute_reply`` have come; keep a monotonic deadline; on a timeout or an
interrupt, send SIGINT, give the code ``interrupt_grace`` seconds to stop,
then restart the kernel. A kernel that dies mid-run is reported and restarted.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import anyio

from ... import replies
from ...config import InputCallback
from ...messages import Message
from ..base import ExecutionOptions
from .kernel import JupyterKernel
from .routing import KernelGone, Route, Wake
from .translate import (
    ACTIVE_LINE_MSG_TYPE,
    INPUT_REQUEST_MSG_TYPE,
    translate_iopub,
    translate_payload,
)

__all__ = ["Execution"]

_COALESCE_LIMIT = 64 * 1024

_STOP_WORDS = {
    "timeout": "timed out",
    "interrupt": "was interrupted",
    "input": "was interrupted because its input() got no answer",
}


async def _call_input(callback: InputCallback, prompt: str) -> str:
    if inspect.iscoroutinefunction(callback):
        value: Any = await callback(prompt)
    else:
        value = await anyio.to_thread.run_sync(callback, prompt, abandon_on_cancel=True)
        if inspect.isawaitable(value):
            value = await value
    if not isinstance(value, str):
        raise TypeError(f"the input callback returned {type(value).__name__}, not str")
    return value


class Execution:
    """One ``execute_request`` in flight on a :class:`JupyterKernel`."""

    def __init__(self, kernel: JupyterKernel, code: str, options: ExecutionOptions) -> None:
        self.kernel = kernel
        self.options = options
        self.reply_to = options.reply_to
        self.started = anyio.current_time()
        self.deadline = (
            self.started + options.timeout if options.timeout is not None else float("inf")
        )
        self.stop_reason: str | None = None
        self.stopped_at = 0.0
        self.line: int | None = None
        self.idle = False
        self.reply: dict[str, Any] | None = None
        self.status = "ok"
        self.complete = False
        self._pending: Any = None
        self._requests: dict[str, int] = {}
        self._answered = 0
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": options.on_input is not None,
            "stop_on_error": True,
        }
        self.route: Route = kernel.request(
            "shell", "execute_request", content, {"lmc_active_line": options.track_lines}
        )

    # -- control from other tasks ------------------------------------------

    async def request_stop(self, reason: str) -> None:
        """Start the ladder: SIGINT now, restart after the grace period."""
        if self.stop_reason is None and not self.complete:
            self.stop_reason = reason
            self.stopped_at = anyio.current_time()
            await self.kernel.interrupt()
            self.route.wake()

    async def settle(self) -> None:
        """After the caller stopped listening: stop the code and wait for the kernel.

        The next request must not queue behind (or be aborted by) this one, so
        drain to ``idle`` within the grace period, else restart the kernel.
        """
        await self.request_stop("interrupt")
        while not (self.idle and self.reply is not None):
            item = await self._next()
            if item is None:
                await self.kernel.restart("an abandoned execution did not stop")
                return
            if isinstance(item, KernelGone):
                if not item.intentional:
                    await self.kernel.ensure_ready()
                return
            if isinstance(item, tuple):
                channel, msg = item
                if channel == "iopub" and msg["msg_type"] == "status":
                    self.idle = self.idle or msg["content"].get("execution_state") == "idle"
                elif channel == "shell" and msg["msg_type"] == "execute_reply":
                    self.reply = msg["content"]

    # -- the loop ------------------------------------------------------------

    def _current_deadline(self) -> float:
        if self.stop_reason is not None:
            return self.stopped_at + self.options.interrupt_grace
        return self.deadline

    async def _next(self) -> Any:
        if self._pending is not None:
            item, self._pending = self._pending, None
            return item
        with anyio.CancelScope(deadline=self._current_deadline()):
            return await self.route.receive.receive()
        return None

    def _coalesce(self, name: str, text: str) -> str:
        """Join stream chunks of the same stream that are already waiting.

        Joining stops at ``_COALESCE_LIMIT`` characters, so a flood makes
        more messages rather than one huge string.
        """
        parts = [text]
        size = len(text)
        while size < _COALESCE_LIMIT:
            try:
                item = self.route.receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
            if (
                isinstance(item, tuple)
                and item[1]["msg_type"] == "stream"
                and item[1]["content"].get("name") == name
            ):
                more = item[1]["content"].get("text", "")
                parts.append(more)
                size += len(more)
                continue
            self._pending = item
            break
        return "".join(parts)

    async def messages(self) -> AsyncIterator[Message]:
        """Yield this execution's messages, ending with ``active_line`` null."""
        while not (self.idle and self.reply is not None):
            item = await self._next()
            if item is None:
                if self.stop_reason is None:
                    await self.request_stop("timeout")
                    continue
                async for m in self._restart_after_stop():
                    yield m
                return
            if isinstance(item, Wake):
                continue
            if isinstance(item, KernelGone):
                async for m in self._kernel_gone(item):
                    yield m
                return
            channel, msg = item
            if msg["msg_type"] in ("input_request", INPUT_REQUEST_MSG_TYPE):
                async for m in self._answer_input(channel, msg["content"]):
                    yield m
            elif channel == "iopub":
                for m in self._iopub(msg):
                    yield m
            elif channel == "shell" and msg["msg_type"] == "execute_reply":
                self.reply = msg["content"]
                for m in translate_payload(self.reply.get("payload", []), self.reply_to):
                    yield m
        self.complete = True
        async for m in self._finish():
            yield m

    def _iopub(self, msg: dict[str, Any]) -> list[Message]:
        msg_type = msg["msg_type"]
        content = msg["content"]
        if msg_type == "status":
            self.idle = self.idle or content.get("execution_state") == "idle"
            return []
        if msg_type == "stream":
            name = content.get("name", "stdout")
            text = self._coalesce(name, content.get("text", ""))
            extras = {"stream": "stderr"} if name == "stderr" else {}
            return [replies.output(text, self.reply_to, **extras)]
        if msg_type == "error" and self.stop_reason is None:
            self.status = "error"
        if msg_type == ACTIVE_LINE_MSG_TYPE:
            line = content.get("line")
            if line == self.line:
                return []
            self.line = line
        return translate_iopub(msg, self.reply_to)

    async def _answer_input(self, channel: str, content: dict[str, Any]) -> AsyncIterator[Message]:
        # Each input() arrives twice (stdin, and its IOPub copy) unless one copy
        # was lost: answer the n-th request on whichever channel brings it first.
        self._requests[channel] = self._requests.get(channel, 0) + 1
        if self._requests[channel] <= self._answered:
            return
        self._answered += 1
        prompt = str(content.get("prompt", ""))
        callback = self.options.on_input
        assert callback is not None  # allow_stdin is only set with a callback
        limit = self.options.input_timeout
        try:
            with anyio.fail_after(min(limit or float("inf"), self.deadline - anyio.current_time())):
                value = await _call_input(callback, prompt)
        except Exception as exc:
            reason = "no answer in time" if isinstance(exc, TimeoutError) else repr(exc)
            yield replies.notice(
                f"input({prompt!r}) could not be answered: {reason}", "error", self.reply_to
            )
            await self.request_stop("input")
            return
        self.kernel.send_input(value)
        shown = "*" * len(value) if content.get("password") else value
        yield replies.output(f"{prompt}{shown}\n", self.reply_to)

    def _where(self) -> str:
        return f" at line {self.line}" if self.line is not None else ""

    def _stop_phrase(self) -> str:
        assert self.stop_reason is not None
        word = _STOP_WORDS[self.stop_reason]
        if self.stop_reason == "timeout":
            word += f" after {self.options.timeout:g} s"
        return f"Execution {word}{self._where()}"

    async def _restart_after_stop(self) -> AsyncIterator[Message]:
        status = "timeout" if self.stop_reason == "timeout" else "interrupted"
        phrase = self._stop_phrase()
        grace = self.options.interrupt_grace
        try:
            await self.kernel.restart(f"{phrase}; the kernel was restarted")
            text = (
                f"{phrase}. It did not stop within {grace:g} s of an interrupt, so the kernel "
                "was restarted: its state (variables, imports) was lost."
            )
        except Exception as exc:
            text = f"{phrase}. The kernel did not stop, and restarting it failed: {exc}"
        yield replies.notice(text, status, self.reply_to, state_lost=True, line=self.line)
        self.complete = True
        yield replies.active_line(None, self.reply_to, status=status, state_lost=True)

    async def _kernel_gone(self, gone: KernelGone) -> AsyncIterator[Message]:
        self.complete = True
        if gone.intentional:
            yield replies.notice(
                f"{gone.description}; the kernel's state was lost.",
                "restarted",
                self.reply_to,
                state_lost=True,
            )
            yield replies.active_line(None, self.reply_to, status="restarted", state_lost=True)
            return
        try:
            await self.kernel.ensure_ready()
            outcome = "it has been restarted"
        except Exception as exc:
            outcome = f"restarting it failed ({exc}); the next run will try again"
        detail = f"\n{gone.log_tail}" if gone.log_tail else ""
        yield replies.notice(
            f"Kernel died{self._where()}: {gone.description}. State lost; {outcome}.{detail}",
            "kernel_died",
            self.reply_to,
            state_lost=True,
            exit_code=gone.exit_code,
            line=self.line,
        )
        yield replies.active_line(None, self.reply_to, status="kernel_died", state_lost=True)

    async def _finish(self) -> AsyncIterator[Message]:
        reply = self.reply or {}
        extras: dict[str, Any] = {"execution_count": reply.get("execution_count")}
        if self.stop_reason is not None:
            status = "timeout" if self.stop_reason == "timeout" else "interrupted"
            yield replies.notice(
                f"{self._stop_phrase()}; the kernel's state was kept.",
                status,
                self.reply_to,
                state_lost=False,
                line=self.line,
            )
            extras.update(status=status, state_lost=False)
        elif reply.get("status") == "aborted":
            yield replies.notice(
                "The kernel aborted this execution without running it.", "aborted", self.reply_to
            )
            extras["status"] = "aborted"
        else:
            extras["status"] = self.status
        if any(p.get("source") == "ask_exit" for p in reply.get("payload", [])):
            await self.kernel.restart("the code asked the kernel to exit")
            yield replies.notice(
                "The code asked the kernel to exit: it was restarted and its state was lost.",
                "restarted",
                self.reply_to,
                state_lost=True,
            )
            extras.update(status="restarted", state_lost=True)
        yield replies.active_line(None, self.reply_to, **extras)
