"""The loop of one Jupyter execution, after nbclient.

Send ``execute_request``; read this request's route (IOPub, shell and stdin
messages whose parent is our ``msg_id``) until both ``status: idle`` and the
``execute_reply`` have come; keep a monotonic deadline; on a timeout or an
interrupt, send SIGINT, give the code ``interrupt_grace`` seconds to stop,
then restart the kernel. A kernel that dies mid-run is reported and restarted.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio

from ... import replies
from ...messages import Message
from ..base import ExecutionOptions
from ..turns import first_of, stop_ladder, stop_phrase
from .answers import InputAnswers
from .kernel import JupyterKernel
from .routing import KernelGone, Route
from .translate import (
    ACTIVE_LINE_MSG_TYPE,
    INPUT_REQUEST_MSG_TYPE,
    translate_iopub,
    translate_payload,
)

__all__ = ["Execution"]

logger = logging.getLogger(__name__)

_COALESCE_LIMIT = 64 * 1024


class Execution:
    """One ``execute_request`` in flight on a :class:`JupyterKernel`."""

    def __init__(self, kernel: JupyterKernel, code: str, options: ExecutionOptions) -> None:
        self.kernel = kernel
        self.options = options
        self.reply_to = options.reply_to
        self.deadline = (
            anyio.current_time() + options.timeout if options.timeout is not None else float("inf")
        )
        self.stop_reason: str | None = None
        self.line: int | None = None
        self.idle = False
        self.reply: dict[str, Any] | None = None
        self.status = "ok"
        self.complete = False
        self._abandoned = False
        self._pending: Any = None
        self._answers = InputAnswers(kernel, options)
        self._stop_requested = anyio.Event()
        #: Called once the kernel is done with this request (or was restarted).
        self.on_finished: Callable[[], None] = lambda: None
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

    def _done(self) -> None:
        """The kernel is finished with this request: stop listening before the
        final messages go out, so a later death is news for the next run."""
        self.complete = True
        self.kernel.release(self.route, retire_as=self.reply_to)

    # -- control from other tasks ------------------------------------------

    async def request_stop(self, reason: str) -> None:
        """Start the ladder: SIGINT now; the watchdog restarts after the grace period."""
        if self.stop_reason is None and not self.route.finished.is_set():
            self.stop_reason = reason
            self._answers.cancel()
            await self.kernel.interrupt()
            self._stop_requested.set()

    async def watch(self) -> None:
        """The deadline and the ladder, whatever pace the caller reads at.

        Waits for the deadline or a stop request (or the end of the request);
        then SIGINT; then, if the code still runs after ``interrupt_grace``,
        restarts the kernel, which ends the route with a ``KernelGone``.
        """
        try:
            await stop_ladder(
                deadline=self.deadline,
                attention=lambda: first_of(self._stop_requested, self.route.finished),
                finished=self.route.finished,
                stop=self.request_stop,
                grace=self.options.interrupt_grace,
                restart=self._restart_after_grace,
            )
        except Exception:
            logger.exception("the execution watchdog failed")
        finally:
            if self._abandoned and not self.complete:
                self.complete = True
                self.kernel.release(self.route, retire_as=self.reply_to)
            self.on_finished()

    def abandon(self) -> None:
        """The caller left: its route drops what still comes (the reader never
        blocks on it), and is released once the watchdog is done."""
        self._abandoned = True
        self.route.receive.close()

    async def _restart_after_grace(self) -> None:
        status = "timeout" if self.stop_reason == "timeout" else "interrupted"
        grace = self.options.interrupt_grace
        await self.kernel.restart(
            f"{self._stop_phrase()}. It did not stop within {grace:g} s of an "
            "interrupt, so the kernel was restarted",
            status=status,
        )

    # -- the loop ------------------------------------------------------------

    async def _next(self) -> Any:
        if self._pending is not None:
            item, self._pending = self._pending, None
            return item
        return await self.route.receive.receive()

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
            if isinstance(item, KernelGone):
                async for m in self._kernel_gone(item):
                    yield m
                return
            channel, msg = item
            if msg["msg_type"] in ("input_request", INPUT_REQUEST_MSG_TYPE):
                async for m in self._answers.answer(
                    channel,
                    msg["content"],
                    stopping=lambda: self.stop_reason is not None,
                    stop=self.request_stop,
                ):
                    yield m
            elif channel == "iopub":
                for m in self._iopub(msg):
                    yield m
            elif channel == "shell" and msg["msg_type"] == "execute_reply":
                self.reply = msg["content"]
                for m in translate_payload(self.reply.get("payload", []), self.reply_to):
                    yield m
        self._done()
        for echo in self._answers.pending_echoes():
            yield echo
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

    def _where(self) -> str:
        return f" at line {self.line}" if self.line is not None else ""

    def _stop_phrase(self) -> str:
        assert self.stop_reason is not None
        return stop_phrase(self.stop_reason, self.options.timeout, self.line)

    async def _kernel_gone(self, gone: KernelGone) -> AsyncIterator[Message]:
        self._done()
        if gone.intentional:
            yield replies.notice(
                f"{gone.description}; the kernel's state was lost.",
                gone.status,
                self.reply_to,
                state_lost=True,
                line=self.line,
            )
            yield replies.active_line(None, self.reply_to, status=gone.status, state_lost=True)
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
