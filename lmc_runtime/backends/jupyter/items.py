"""What a kernel's readers hand to a run, and the route that knows when the run is over.

Stream output becomes the core's :class:`~..core.Output` (so the core joins
it), the sampler's ``lmc_active_line`` a :class:`~..core.Line`, an input
request an :class:`InputRequest` that can answer itself; every other message
of a run travels as a :class:`Reply`. A run is over when the kernel has sent
both ``status: idle`` and the ``execute_reply`` (:class:`JupyterRoute`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core import Line, Output, Route
from .translate import ACTIVE_LINE_MSG_TYPE, INPUT_REQUEST_MSG_TYPE

__all__ = ["InputRequest", "Item", "JupyterRoute", "Reply", "asks_exit", "is_idle", "to_item"]


@dataclass(frozen=True)
class Reply:
    """A message of a run other than its output and lines (results, errors, the reply)."""

    channel: str
    msg: Mapping[str, Any]

    @property
    def msg_type(self) -> str:
        return str(self.msg["msg_type"])

    @property
    def content(self) -> Mapping[str, Any]:
        content: Mapping[str, Any] = self.msg["content"]
        return content


@dataclass(frozen=True)
class InputRequest:
    """The code asks for a line: ``channel`` is ``stdin``, or ``iopub`` for the copy
    a kernel that ``announced`` its requests publishes; ``answer`` sends the line."""

    channel: str
    content: Mapping[str, Any]
    answer: Callable[[str], None]
    announced: bool


Item = Output | Line | Reply | InputRequest


def is_idle(msg: Mapping[str, Any]) -> bool:
    return bool(msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle")


def asks_exit(msg: Mapping[str, Any]) -> bool:
    """Whether an ``execute_reply`` carries the code's ``exit()`` (``ask_exit``)."""
    payloads = msg["content"].get("payload") or []
    return any(p.get("source") == "ask_exit" and not p.get("keepkernel") for p in payloads)


def to_item(
    channel: str, msg: Mapping[str, Any], answer: Callable[[str], None], announced: bool
) -> Item | None:
    """One kernel message as what its run reads, or None for one no run needs."""
    msg_type, content = msg["msg_type"], msg["content"]
    if msg_type == "stream":
        return Output(
            str(content.get("text", "")), "stderr" if content.get("name") == "stderr" else "stdout"
        )
    if msg_type == ACTIVE_LINE_MSG_TYPE:
        line = content.get("line")
        return Line(line) if isinstance(line, int) and line >= 1 else None
    if msg_type in ("input_request", INPUT_REQUEST_MSG_TYPE):
        return InputRequest(channel, content, answer, announced)
    if msg_type == "status" and not is_idle(msg):
        return None
    if msg_type == "execute_input":
        return None
    return Reply(channel, msg)


class JupyterRoute(Route):
    """A run's route: finished once both ``status: idle`` and the reply came.

    A reply asking the kernel to exit does not finish the run: the kernel is
    ended instead, and the run ends with that.
    """

    def __init__(self, key: object, tag: str) -> None:
        super().__init__(key, tag)
        self._idle = False
        self._replied = False

    def observe(self, item: Any) -> bool:
        if isinstance(item, Reply):
            if is_idle(item.msg):
                self._idle = True
            elif item.channel == "shell" and item.msg_type == "execute_reply":
                self._replied = self._replied or not asks_exit(item.msg)
        return self._idle and self._replied
