"""A kernel's messages as the items of a run, and when a run is over."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...replies import Status
from ..core import Finished, Line, Output
from .translate import ACTIVE_LINE_MSG_TYPE, INPUT_REQUEST_MSG_TYPE

__all__ = ["InputRequest", "Progress", "Reply", "RunEnds", "asks_exit", "is_idle", "to_item"]


@dataclass(frozen=True)
class Reply:
    """A message of a run other than output and lines: results, errors, the reply."""

    channel: str
    msg: Mapping[str, Any]

    @property
    def size(self) -> int:
        """The length of the texts of its data (a display's images, in base64): what
        the route holding it counts (see :func:`~..core.route.size_of`)."""
        data = self.msg["content"].get("data")
        if not isinstance(data, Mapping):
            return 0
        return sum(len(value) for value in data.values() if isinstance(value, str))


@dataclass(frozen=True)
class Progress:
    """How far the kernel got with a run: ``begun`` (its ``execute_input``),
    ``evaluating`` (the startup code's ``lmc_begun``: the code is about to run,
    where an interrupt reaches it) or ``idle`` (its handler returned, with or
    without a reply)."""

    state: str


@dataclass(frozen=True)
class InputRequest:
    """The code asks for a line: on ``stdin``, or the ``iopub`` copy a kernel that
    ``announced`` its requests publishes; ``answer`` sends the line."""

    channel: str
    content: Mapping[str, Any]
    answer: Callable[[str], None]
    announced: bool


def is_idle(msg: Mapping[str, Any]) -> bool:
    return bool(msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle")


def asks_exit(msg: Mapping[str, Any]) -> bool:
    """Whether an ``execute_reply`` carries the code's ``exit()`` (``ask_exit``)."""
    payloads = msg["content"].get("payload") or []
    return any(p.get("source") == "ask_exit" and not p.get("keepkernel") for p in payloads)


_PROGRESS = {"execute_input": "begun", "lmc_begun": "evaluating"}


def to_item(
    channel: str, msg: Mapping[str, Any], answer: Callable[[str], None], announced: bool
) -> Output | Line | Reply | InputRequest | Progress | None:
    """One kernel message as what its run reads, or None for one no run needs."""
    msg_type, content = msg["msg_type"], msg["content"]
    if msg_type == "stream":
        stream = "stderr" if content.get("name") == "stderr" else "stdout"
        return Output(str(content.get("text", "")), stream)
    if msg_type == ACTIVE_LINE_MSG_TYPE:
        line = content.get("line")
        return Line(line) if isinstance(line, int) and line >= 1 else None
    if msg_type in ("input_request", INPUT_REQUEST_MSG_TYPE):
        return InputRequest(channel, content, answer, announced)
    if msg_type in _PROGRESS:
        return Progress(_PROGRESS[msg_type])
    if msg_type == "status":
        return Progress("idle") if is_idle(msg) else None
    if msg_type == "execute_reply" and not content.get("payload"):
        return None  # its end is the run's Finished: nothing else in it is read
    return Reply(channel, msg)


_STATUS = {"error": Status.ERROR, "aborted": Status.ABORTED}
#: How many ended runs :class:`RunEnds` remembers.
_OVER_KEPT = 64


class RunEnds:
    """A run is over once its ``status: idle`` and its ``execute_reply`` both came."""

    def __init__(self) -> None:
        self._idle: set[str] = set()
        self._replies: dict[str, Mapping[str, Any]] = {}
        #: The runs that ended last, oldest first.
        self._over: OrderedDict[str, None] = OrderedDict()

    def over(self, parent: str) -> bool:
        """Whether the run ``parent`` has ended (one of the last :data:`_OVER_KEPT`)."""
        return parent in self._over

    def see(self, channel: str, msg: Mapping[str, Any], parent: str) -> Mapping[str, Any] | None:
        """The run's ``execute_reply`` once both came (the run is then forgotten)."""
        if channel == "iopub" and is_idle(msg):
            self._idle.add(parent)
        elif channel == "shell" and msg["msg_type"] == "execute_reply":
            self._replies[parent] = msg
        if parent not in self._idle or parent not in self._replies:
            return None
        self._idle.discard(parent)
        self._over[parent] = None
        while len(self._over) > _OVER_KEPT:
            self._over.popitem(last=False)
        return self._replies.pop(parent)

    @staticmethod
    def finished(reply: Mapping[str, Any]) -> Finished:
        """How the run ended, as its reply says: an error's class is ``extras.error``."""
        content = reply["content"]
        status = _STATUS.get(content.get("status"), Status.OK)
        extras: dict[str, Any] = {"execution_count": content.get("execution_count")}
        if status is Status.ERROR and isinstance(content.get("ename"), str):
            extras["error"] = content["ename"]
        return Finished(status, extras)
