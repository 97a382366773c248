"""The refusals of ``lmc serve``: one :class:`ServiceError` per reason.

They are the server's own: :mod:`lmc_runtime.service.problems` answers each with
an HTTP status and an :class:`~lmc_runtime.error_codes.ErrorCode`, and a client of
:mod:`lmc_runtime.remote` sees a :class:`~lmc_runtime.errors.RemoteError`
instead. :class:`ServiceError` itself, and the refusals of a request's
credentials (:class:`~lmc_runtime.errors.TokenRejected`, ...) that ``lmc mcp``
shares, are in :mod:`lmc_runtime.errors`::

    ServiceError
    ├── SessionNotFound, SessionEnded, SessionLost, SessionBusy, SessionStartFailed
    ├── CapacityExceeded, LimitTooHigh, NetworkNotAllowed
    ├── UnknownLanguage, LanguageUnavailable, ShuttingDown, ServiceUnavailable
    ├── InvalidRequest, MalformedRequest, RequestTooLarge
    └── BadPath, SessionFileNotFound, NotARegularFile, PathIsDirectory,
        PathRefused, DiskLimitExceeded, FileExists, DirectoryNotEmpty,
        PathNotDirectory
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ServiceError

__all__ = [
    "BadPath",
    "CapacityExceeded",
    "DirectoryNotEmpty",
    "DiskLimitExceeded",
    "FileExists",
    "InvalidRequest",
    "LanguageUnavailable",
    "LimitTooHigh",
    "MalformedRequest",
    "NetworkNotAllowed",
    "NotARegularFile",
    "PathIsDirectory",
    "PathNotDirectory",
    "PathRefused",
    "RequestTooLarge",
    "ServiceError",
    "ServiceUnavailable",
    "SessionBusy",
    "SessionEnded",
    "SessionFileNotFound",
    "SessionLost",
    "SessionNotFound",
    "SessionStartFailed",
    "ShuttingDown",
    "UnknownLanguage",
]


class SessionNotFound(ServiceError, LookupError):
    """No session has this id, and none had it recently."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class SessionEnded(ServiceError):
    """The session has ended (``reason`` says why, when it is known)."""

    def __init__(self, session_id: str, reason: str | None = None) -> None:
        tail = f": {reason}" if reason else ""
        super().__init__(f"session {session_id} has ended{tail}")
        self.session_id = session_id
        self.reason = reason


class SessionLost(ServiceError):
    """The session existed but its state is gone: the replica that held it died
    or restarted (HTTP 410; ``reason`` says what is known)."""

    def __init__(self, session_id: str, reason: str) -> None:
        super().__init__(f"session {session_id} was lost: {reason}")
        self.session_id = session_id
        self.reason = reason


class SessionBusy(ServiceError):
    """The session is running code; it runs one execution at a time."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id} is running code; wait or interrupt it")
        self.session_id = session_id


class SessionStartFailed(ServiceError):
    """A new session's sandbox or kernel did not come up."""

    def __init__(self, session_id: str, error: BaseException) -> None:
        super().__init__(f"the session could not start: {error}")
        self.session_id = session_id
        self.error = error


class CapacityExceeded(ServiceError):
    """The service already runs as many sessions as it may."""

    def __init__(self, max_sessions: int) -> None:
        super().__init__(
            f"the service runs at most {max_sessions} sessions; delete one or try again later"
        )
        self.max_sessions = max_sessions


class LimitTooHigh(ServiceError, ValueError):
    """A session asked for more of a resource than the service allows."""

    def __init__(self, name: str, most: object, asked: object) -> None:
        super().__init__(f"limits.{name} may be at most {most}, got {asked}")
        self.name = name
        self.most = most
        self.asked = asked


class NetworkNotAllowed(ServiceError):
    """A session asked for network access on a service that gives none."""

    def __init__(self) -> None:
        super().__init__(
            "this server gives sessions no network access; its operator can allow it "
            "with `lmc serve --allow-network`"
        )


class UnknownLanguage(ServiceError, ValueError):
    """No backend has this language name or alias (``known`` lists the names, if given)."""

    def __init__(self, language: str, known: Sequence[str] = ()) -> None:
        tail = f"; known: {', '.join(known)}" if known else ""
        super().__init__(f"unknown language {language!r}{tail}")
        self.language = language
        self.known = tuple(known)


class LanguageUnavailable(ServiceError):
    """A session asked for a language this machine cannot run."""

    def __init__(self, language: str, reason: str) -> None:
        super().__init__(f"{language} is not available here: {reason}")
        self.language = language
        self.reason = reason


class ShuttingDown(ServiceError):
    """The service is shutting down and starts nothing new."""

    def __init__(self) -> None:
        super().__init__("the service is shutting down")


class ServiceUnavailable(ServiceError):
    """The service cannot start sessions (it is not running yet, or any more)."""


class InvalidRequest(ServiceError, ValueError):
    """A request's parameters are invalid; the message says which and why."""


class MalformedRequest(ServiceError, ValueError):
    """A request's body cannot be read (not JSON, not a code message...)."""


class RequestTooLarge(ServiceError):
    """A request body or an upload is larger than the service accepts."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"the {what} is larger than {limit} bytes")
        self.what = what
        self.limit = limit


class BadPath(ServiceError, ValueError):
    """A file path that is not a plain relative path in the working directory."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason


class SessionFileNotFound(ServiceError, LookupError):
    """No file has this path in the session's working directory."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no file {path!r} in the session")
        self.path = path


class NotARegularFile(ServiceError):
    """The path names a device, a FIFO, a socket... (``kind`` says which)."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path!r} is {kind}: refused")
        self.path = path
        self.kind = kind


class PathIsDirectory(ServiceError):
    """The path names a directory where a file is needed."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path!r} is a directory")
        self.path = path


class PathRefused(ServiceError):
    """The path cannot be opened safely (a symbolic link on the way, ...)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path!r} {reason}")
        self.path = path
        self.reason = reason


class DiskLimitExceeded(ServiceError):
    """A file does not fit the session's disk limits."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path!r} does not fit the session's disk limits")
        self.path = path


class FileExists(ServiceError):
    """The path already names a file or folder, and nothing may replace it."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path!r} already exists")
        self.path = path


class DirectoryNotEmpty(ServiceError):
    """A folder that still holds entries, where only an empty one will do."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path!r} is a directory that is not empty")
        self.path = path


class PathNotDirectory(ServiceError):
    """The path, or a component on its way, names a file where a folder is needed."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path!r} is not a directory, or goes through a file")
        self.path = path
