"""Builders for the computer-role messages every backend emits.

Status information that a program needs goes into ``extras`` (``status`` and
friends); the ``content`` is a sentence for the model to read.
"""

from __future__ import annotations

import enum
from typing import Any

from .messages import Message

__all__ = [
    "Status",
    "active_line",
    "html",
    "image",
    "not_understood",
    "notice",
    "output",
]


class Status(enum.StrEnum):
    """Machine-readable statuses carried in ``extras["status"]``.

    A :class:`enum.StrEnum`: it compares equal to its value and serializes as it.
    """

    OK = "ok"
    ERROR = "error"
    NOT_UNDERSTOOD = "not_understood"
    MALFORMED = "malformed"
    UNAVAILABLE = "unavailable"
    BACKEND_ERROR = "backend_error"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"
    KERNEL_DIED = "kernel_died"
    RESTARTED = "restarted"
    ABORTED = "aborted"
    CLOSED = "closed"
    TRUNCATED = "truncated"
    MEMORY_LIMIT = "memory_limit"
    CPU_LIMIT = "cpu_limit"
    PROCESS_LIMIT = "process_limit"
    DISK_LIMIT = "disk_limit"
    FILE_SIZE_LIMIT = "file_size_limit"
    #: A run the server did not finish: it stopped without a shutdown (killed,
    #: a power cut) while the run went on; given when it starts again.
    SERVER_LOST = "server_lost"

    @classmethod
    def of_stop(cls, reason: str) -> Status:
        """The status of a run stopped for ``reason`` (``"timeout"``, ``"interrupt"``...)."""
        return cls.TIMEOUT if reason == "timeout" else cls.INTERRUPTED


def _plain(extras: dict[str, Any]) -> dict[str, Any] | None:
    """``extras`` with a :class:`Status` stored as its plain string."""
    status = extras.get("status")
    if isinstance(status, Status):
        extras["status"] = status.value
    return extras or None


def output(text: str, reply_to: str | None, **extras: Any) -> Message:
    """Console output (stdout, stderr, results and errors)."""
    return Message.computer("console", "output", text, in_reply_to=reply_to, extras=_plain(extras))


def active_line(line: int | None, reply_to: str | None, **extras: Any) -> Message:
    """The 1-based line now running, or None when the execution is over."""
    return Message.computer(
        "console", "active_line", line, in_reply_to=reply_to, extras=_plain(extras)
    )


def image(data: str, mime: str, reply_to: str | None) -> Message:
    """A base64 PNG or JPEG image."""
    fmt = "base64.jpeg" if mime == "image/jpeg" else "base64.png"
    return Message.computer("image", fmt, data, in_reply_to=reply_to)


def html(markup: str, reply_to: str | None) -> Message:
    """HTML output for a UI to display."""
    return Message.computer("code", "html", markup, in_reply_to=reply_to)


def notice(text: str, status: str | Status, reply_to: str | None, **details: Any) -> Message:
    """A sentence from the runtime itself, with a machine-readable status."""
    return output(f"[lmc] {text}\n", reply_to, status=status, **details)


def not_understood(
    reason: str,
    reply_to: str | None,
    *,
    status: str | Status = Status.NOT_UNDERSTOOD,
    **details: Any,
) -> Message:
    """The reply to a message the computer cannot run, saying exactly why."""
    return output(
        f"[lmc] not understood: {reason}\n", reply_to, status=status, reason=reason, **details
    )
