"""Builders for the computer-role messages every backend emits.

Status information that a program needs goes into ``extras`` (``status`` and
friends); the ``content`` is a sentence for the model to read.
"""

from __future__ import annotations

from typing import Any

from .messages import Message

__all__ = [
    "STATUSES",
    "active_line",
    "html",
    "image",
    "not_understood",
    "notice",
    "output",
]

#: Machine-readable statuses carried in ``extras["status"]``.
STATUSES = (
    "ok",
    "error",
    "not_understood",
    "unavailable",
    "backend_error",
    "timeout",
    "interrupted",
    "kernel_died",
    "restarted",
    "aborted",
    "closed",
    "truncated",
    "memory_limit",
    "cpu_limit",
    "process_limit",
    "disk_limit",
    "file_size_limit",
)


def output(text: str, reply_to: str | None, **extras: Any) -> Message:
    """Console output (stdout, stderr, results and errors)."""
    return Message.computer("console", "output", text, in_reply_to=reply_to, extras=extras or None)


def active_line(line: int | None, reply_to: str | None, **extras: Any) -> Message:
    """The 1-based line now running, or None when the execution is over."""
    return Message.computer(
        "console", "active_line", line, in_reply_to=reply_to, extras=extras or None
    )


def image(data: str, mime: str, reply_to: str | None) -> Message:
    """A base64 PNG or JPEG image."""
    fmt = "base64.jpeg" if mime == "image/jpeg" else "base64.png"
    return Message.computer("image", fmt, data, in_reply_to=reply_to)


def html(markup: str, reply_to: str | None) -> Message:
    """HTML output for a UI to display."""
    return Message.computer("code", "html", markup, in_reply_to=reply_to)


def notice(text: str, status: str, reply_to: str | None, **details: Any) -> Message:
    """A sentence from the runtime itself, with a machine-readable status."""
    return output(f"[lmc] {text}\n", reply_to, status=status, **details)


def not_understood(
    reason: str,
    reply_to: str | None,
    *,
    status: str = "not_understood",
    **details: Any,
) -> Message:
    """The reply to a message the computer cannot run, saying exactly why."""
    return output(
        f"[lmc] not understood: {reason}\n", reply_to, status=status, reason=reason, **details
    )
