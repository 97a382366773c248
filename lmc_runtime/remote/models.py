"""What the client SDK hands back: file information, and its timeouts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import RemoteError

__all__ = ["FileInfo", "RemoteTimeouts"]

FileKind = Literal["file", "directory", "symlink", "other"]
_KINDS: tuple[str, ...] = ("file", "directory", "symlink", "other")


@dataclass(frozen=True)
class FileInfo:
    """One entry of a session's working directory, as the server ``lstat``\\ s it.

    ``path`` is relative to the working directory, ``name`` its last component,
    ``mtime`` in Unix seconds. A symbolic link is reported, never followed.
    """

    path: str
    name: str
    kind: FileKind
    size: int
    mtime: float

    @property
    def is_dir(self) -> bool:
        return self.kind == "directory"

    @property
    def is_file(self) -> bool:
        return self.kind == "file"

    @classmethod
    def from_json(cls, data: Any) -> FileInfo:
        """A FileInfo from the server's JSON; :class:`RemoteError` if it is not one."""
        try:
            kind = data["kind"]
            if kind not in _KINDS:
                raise ValueError(f"unknown kind {kind!r}")
            return cls(
                path=str(data["path"]),
                name=str(data["name"]),
                kind=kind,
                size=int(data["size"]),
                mtime=float(data["mtime"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RemoteError(
                f"the server sent file information the client cannot read: {exc!r}",
                code="protocol",
            ) from exc


def _check(name: str, value: float | None, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")


@dataclass(frozen=True)
class RemoteTimeouts:
    """How long the client waits for the server, in seconds.

    ``connect``: to open a connection. ``request``: for any answer other than an
    execution's stream (creating a session may start a sandbox and a kernel).
    ``execution``: the timeout runs get when they give none (None: the server's).
    ``margin``: past a run's own timeout, how long the client still waits for its
    next message before it calls the connection lost; a run with no timeout at
    all is bounded by TCP keep-alive (``keepalive`` seconds idle, then probes)
    over HTTP and by pings every ``ping`` seconds over the WebSocket.
    """

    connect: float = 10.0
    request: float = 120.0
    execution: float | None = None
    margin: float = 30.0
    keepalive: float = 10.0
    ping: float = 10.0

    def __post_init__(self) -> None:
        for name in ("connect", "request", "margin", "keepalive", "ping"):
            _check(name, getattr(self, name))
        _check("execution", self.execution, optional=True)

    def read_bound(self, timeout: float | None) -> float | None:
        """The longest wait for one message of a run with ``timeout`` (None: unbounded)."""
        chosen = timeout if timeout is not None else self.execution
        return None if chosen is None else chosen + self.margin
