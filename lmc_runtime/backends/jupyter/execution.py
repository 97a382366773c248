"""A run on a Jupyter kernel: the core's :class:`~..core.Execution` plus the kernel's
own messages (results, displays, errors, pager payloads) and input requests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ... import replies
from ...messages import Message
from ...replies import Status
from ..base import ExecutionOptions
from ..core import Execution, Finished, Route, Supervisor
from .answers import InputAnswers
from .items import InputRequest, Reply
from .translate import translate_iopub, translate_payload

__all__ = ["JupyterExecution"]


class JupyterExecution(Execution):
    """One ``execute_request`` in flight; the kernel's sampler paces active lines."""

    dwell = 0.0

    def __init__(self, supervisor: Supervisor, route: Route, options: ExecutionOptions) -> None:
        super().__init__(supervisor, route, options)
        self._answers = InputAnswers(options)

    async def interrupt_code(self) -> None:
        self._answers.cancel()  # a callback still thinking is abandoned
        await super().interrupt_code()

    async def handle(self, item: Any) -> AsyncIterator[Any]:
        if isinstance(item, InputRequest):
            async for message in self._answers.answer(item, self._stopping, self.request_stop):
                yield message
        elif isinstance(item, Reply) and item.channel == "iopub":
            for message in await translate_iopub(item.msg, self.reply_to):
                yield message
        elif isinstance(item, Reply) and item.msg["msg_type"] == "execute_reply":
            for message in translate_payload(
                item.msg["content"].get("payload") or [], self.reply_to
            ):
                yield message

    def _stopping(self) -> bool:
        return self.stop_reason is not None

    def finish(self, done: Finished) -> list[Message]:
        """Echoes of answered input whose IOPub copy never came, then the end."""
        out = self._answers.pending_echoes()
        if done.status == Status.ABORTED and self.stop_reason is None:
            text = "The kernel aborted this execution without running it."
            out.append(replies.notice(text, Status.ABORTED, self.reply_to))
        return out + super().finish(done)
