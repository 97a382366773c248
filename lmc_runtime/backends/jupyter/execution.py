"""A run on a Jupyter kernel: what is Jupyter's own, on the core's :class:`~..core.Execution`.

The core keeps the deadline, the stop ladder, output joining and the final
message; this adds the kernel's messages (results, displays, errors, pager
payloads, ``aborted``), its input requests, and the end of a run: both
``status: idle`` and the ``execute_reply``. Active lines come from the
kernel's own sampler, which paces them, so they are shown as they come.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from ... import replies
from ...replies import Status
from ..base import ExecutionOptions
from ..core import Execution, Finished, Route, Supervisor
from .answers import InputAnswers
from .items import InputRequest, Reply, asks_exit, is_idle
from .translate import translate_iopub, translate_payload

__all__ = ["JupyterExecution"]


class JupyterExecution(Execution):
    """One ``execute_request`` in flight on a kernel."""

    dwell = 0.0
    interval = 0.0

    def __init__(self, supervisor: Supervisor, route: Route, options: ExecutionOptions) -> None:
        super().__init__(supervisor, route, options)
        self._answers = InputAnswers(options)
        self._idle = False
        self._reply: Mapping[str, Any] | None = None
        self._status = Status.OK

    async def interrupt_code(self) -> None:
        self._answers.cancel()  # a callback still thinking is abandoned
        await super().interrupt_code()

    async def handle(self, item: Any) -> AsyncIterator[Any]:
        if isinstance(item, InputRequest):
            async for message in self._answers.answer(
                item, stopping=lambda: self.stop_reason is not None, stop=self.request_stop
            ):
                yield message
            return
        if not isinstance(item, Reply):
            return
        if item.channel == "iopub":
            if is_idle(item.msg):
                self._idle = True
            elif item.msg_type == "error" and self.stop_reason is None:
                self._status = Status.ERROR
            for message in await translate_iopub(item.msg, self.reply_to):
                yield message
        elif item.channel == "shell" and item.msg_type == "execute_reply":
            # After exit() the kernel is ended instead: the run ends with that.
            self._reply = None if asks_exit(item.msg) else item.content
            for message in translate_payload(item.content.get("payload") or [], self.reply_to):
                yield message
        if self._idle and self._reply is not None:
            for message in self._end():
                yield message

    def _end(self) -> list[Any]:
        """Echoes of answered input whose IOPub copy never came, then the end."""
        out: list[Any] = list(self._answers.pending_echoes())
        reply = self._reply or {}
        extras = {"execution_count": reply.get("execution_count")}
        status = self._status
        if reply.get("status") == "aborted" and self.stop_reason is None:
            out.append(
                replies.notice(
                    "The kernel aborted this execution without running it.",
                    Status.ABORTED,
                    self.reply_to,
                )
            )
            status = Status.ABORTED
        out.append(Finished(status, extras))
        return out
