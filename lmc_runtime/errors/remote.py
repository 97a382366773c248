"""What a client of a remote ``lmc serve`` (:mod:`lmc_runtime.remote`) catches: the
server refused its request, or the connection broke."""

from __future__ import annotations

from .runtime import CheckpointNotFound, CheckpointsUnsupported, LMCError

__all__ = [
    "ConnectionLost",
    "RemoteBusy",
    "RemoteCapacityExceeded",
    "RemoteCheckpointNotFound",
    "RemoteCheckpointsUnsupported",
    "RemoteError",
    "RemoteFileExists",
    "RemoteFileNotFound",
    "RemotePathError",
    "RemoteSessionEnded",
    "RemoteSessionLost",
    "RemoteSessionNotFound",
    "RemoteTooLarge",
    "RemoteUnauthorized",
    "RemoteUnavailable",
]


class RemoteError(LMCError):
    """A remote ``lmc serve`` refused a request of :mod:`lmc_runtime.remote`.

    ``status`` is the HTTP status (None when there was no answer), ``code`` the
    error body's stable code (``busy``, ``file_not_found``...), ``message`` its
    sentence. The subclasses below are what callers usually handle::

        RemoteError
        ├── RemoteUnauthorized      the token was refused (401, 403)
        ├── RemoteSessionNotFound   no such session (404)
        │   ├── RemoteSessionEnded      the session has ended
        │   └── RemoteSessionLost       its server (replica) died or restarted (410)
        ├── RemoteBusy              the session is running code (409 busy)
        ├── RemoteCapacityExceeded  the server runs as many sessions as it may (429)
        ├── RemotePathError         a file path was refused (bad, unsafe, wrong kind)
        │   ├── RemoteFileNotFound      no file there
        │   └── RemoteFileExists        something is in the way (exists, not empty)
        ├── RemoteTooLarge          a body or a file over a limit (413)
        ├── RemoteUnavailable       the server cannot do it now (503)
        └── ConnectionLost          the connection broke; the session may live on
    """

    def __init__(self, message: str, *, status: int | None = None, code: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


class RemoteUnauthorized(RemoteError):
    """The server refused the bearer token (or the request's origin)."""


class RemoteSessionNotFound(RemoteError, LookupError):
    """The server has no session with that id."""


class RemoteSessionEnded(RemoteSessionNotFound):
    """The session has ended (deleted, culled, its sandbox died)."""


class RemoteSessionLost(RemoteSessionNotFound):
    """The session's state is gone: the server or replica that held it died or
    restarted (410 ``session_lost``); its transcript may still be in the store."""


class RemoteBusy(RemoteError):
    """The session is running code; it runs one execution at a time."""


class RemoteCapacityExceeded(RemoteError):
    """The server already runs as many sessions as it may."""


class RemotePathError(RemoteError, ValueError):
    """A file path the server refused: not a plain relative path, a link, a
    directory where a file is needed (``code`` says which)."""


class RemoteFileNotFound(RemotePathError, LookupError):
    """No file has that path in the session."""


class RemoteFileExists(RemotePathError):
    """Something is in the way: the destination exists, or a directory is not empty."""


class RemoteTooLarge(RemoteError):
    """A request body or a file is larger than the server or the session allows."""


class RemoteUnavailable(RemoteError):
    """The server cannot do it now (shutting down, the session failed to start)."""


class RemoteCheckpointNotFound(RemoteError, CheckpointNotFound):
    """The session has no checkpoint with that id (404), or its frozen process
    ended (410 ``checkpoint_gone``): as a local Computer says, a
    :class:`~lmc_runtime.errors.CheckpointNotFound`."""


class RemoteCheckpointsUnsupported(RemoteError, CheckpointsUnsupported):
    """The server cannot keep checkpoints of this session (its sandbox, its
    language): a :class:`~lmc_runtime.errors.CheckpointsUnsupported`."""


class ConnectionLost(RemoteError, ConnectionError):
    """The connection to the server broke (``session_id`` names the session, which
    may still be alive: ``RemoteComputer.attach`` reattaches to it)."""

    def __init__(self, message: str, session_id: str | None) -> None:
        super().__init__(message, status=None, code="connection_lost")
        self.session_id = session_id
