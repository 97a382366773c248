"""The refusals of ``lmc serve``: one :class:`ServiceError` per reason.

They are the server's own: :mod:`lmc_runtime.service.problems` answers each with
an HTTP status and an :class:`~lmc_runtime.error_codes.ErrorCode`, and a client of
:mod:`lmc_runtime.remote` sees a :class:`~lmc_runtime.errors.RemoteError`
instead. :class:`ServiceError` itself, and the refusals of a request's
credentials (:class:`~lmc_runtime.errors.TokenRejected`, ...) that ``lmc mcp``
shares, are in :mod:`lmc_runtime.errors`::

    ServiceError
    ├── SessionNotFound, SessionEnded, SessionLost, SessionBusy, SessionStartFailed
    ├── CapacityExceeded, LimitTooHigh, NetworkNotAllowed, BadNetworkPolicy
    ├── UnknownLanguage, LanguageUnavailable, ShuttingDown, ServiceUnavailable
    ├── UnknownEnvironment, EnvironmentBroken
    ├── InvalidRequest, MalformedRequest, RequestTooLarge
    └── BadPath, SessionFileNotFound, NotARegularFile, PathIsDirectory,
        PathRefused, DiskLimitExceeded, FileExists, DirectoryNotEmpty,
        PathNotDirectory

The refusals of a network policy (:mod:`lmc_runtime.egress.errors`) and of an
environment (:mod:`lmc_runtime.environments.errors`) are raised where they are
found, below the service, and named here too.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..egress.errors import BadNetworkPolicy, NetworkNotAllowed
from ..environments.errors import EnvironmentBroken, UnknownEnvironment
from ..errors import ServiceError
from ..errors.runtime import templated

__all__ = [
    "BadNetworkPolicy",
    "BadPath",
    "CapacityExceeded",
    "CheckpointGone",
    "CheckpointMemory",
    "CheckpointUnknown",
    "DirectoryNotEmpty",
    "DiskLimitExceeded",
    "EnvironmentBroken",
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
    "TooManyCheckpoints",
    "UnknownEnvironment",
    "UnknownLanguage",
]


@templated
class SessionNotFound(ServiceError, LookupError):
    """No session has this id, and none had it recently."""

    session_id: str
    template = "no session {session_id!r}"


class SessionEnded(ServiceError):
    """The session has ended (``reason`` says why, when it is known)."""

    def __init__(self, session_id: str, reason: str | None = None) -> None:
        tail = f": {reason}" if reason else ""
        super().__init__(f"session {session_id} has ended{tail}")
        self.session_id = session_id
        self.reason = reason


@templated
class SessionLost(ServiceError):
    """The session existed but its state is gone: the replica that held it died
    or restarted (HTTP 410; ``reason`` says what is known)."""

    session_id: str
    reason: str
    template = "session {session_id} was lost: {reason}"


@templated
class SessionBusy(ServiceError):
    """The session is running code; it runs one execution at a time."""

    session_id: str
    template = "session {session_id} is running code; wait or interrupt it"


@templated
class CheckpointUnknown(ServiceError, LookupError):
    """The session has no checkpoint with this id."""

    checkpoint_id: str
    template = "no checkpoint {checkpoint_id!r} in this session"


@templated
class CheckpointGone(ServiceError):
    """The checkpoint's frozen process has ended (killed, or its memory reclaimed)."""

    checkpoint_id: str
    template = "checkpoint {checkpoint_id} is gone: its frozen process ended"


@templated
class CheckpointMemory(ServiceError):
    """A checkpoint could double the memory the session uses: more than half of
    its memory limit is in use already (its earlier checkpoints' pages included)."""

    used: int
    limit: int
    template = (
        "the session uses {used} bytes of its {limit}-byte memory limit; a checkpoint could "
        "double that (its copy keeps every page the kernel writes), so one is taken only "
        "below half of the limit: drop a checkpoint or free memory first"
    )


@templated
class TooManyCheckpoints(ServiceError):
    """The session keeps as many checkpoints as the server allows (``--max-checkpoints``)."""

    limit: int
    template = "the session already keeps {limit} checkpoints, the server's limit; drop one first"


@templated
class SessionStartFailed(ServiceError):
    """A new session's sandbox or kernel did not come up."""

    session_id: str
    error: BaseException
    template = "the session could not start: {error}"


@templated
class CapacityExceeded(ServiceError):
    """The service already runs as many sessions as it may."""

    max_sessions: int
    template = "the service runs at most {max_sessions} sessions; delete one or try again later"


@templated
class LimitTooHigh(ServiceError, ValueError):
    """A session asked for more of a resource than the service allows."""

    name: str
    most: object
    asked: object
    template = "limits.{name} may be at most {most}, got {asked}"


class UnknownLanguage(ServiceError, ValueError):
    """No backend has this language name or alias (``known`` lists the names, if given)."""

    def __init__(self, language: str, known: Sequence[str] = ()) -> None:
        tail = f"; known: {', '.join(known)}" if known else ""
        super().__init__(f"unknown language {language!r}{tail}")
        self.language = language
        self.known = tuple(known)


@templated
class LanguageUnavailable(ServiceError):
    """A session asked for a language this machine cannot run."""

    language: str
    reason: str
    template = "{language} is not available here: {reason}"


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


@templated
class RequestTooLarge(ServiceError):
    """A request body or an upload is larger than the service accepts."""

    what: str
    limit: int
    template = "the {what} is larger than {limit} bytes"


@templated
class BadPath(ServiceError, ValueError):
    """A file path that is not a plain relative path in the working directory."""

    path: str
    reason: str
    template = "{reason}"


@templated
class SessionFileNotFound(ServiceError, LookupError):
    """No file has this path in the session's working directory."""

    path: str
    template = "no file {path!r} in the session"


@templated
class NotARegularFile(ServiceError):
    """The path names a device, a FIFO, a socket... (``kind`` says which)."""

    path: str
    kind: str
    template = "{path!r} is {kind}: refused"


@templated
class PathIsDirectory(ServiceError):
    """The path names a directory where a file is needed."""

    path: str
    template = "{path!r} is a directory"


@templated
class PathRefused(ServiceError):
    """The path cannot be opened safely (a symbolic link on the way, ...)."""

    path: str
    reason: str
    template = "{path!r} {reason}"


@templated
class DiskLimitExceeded(ServiceError):
    """A file does not fit the session's disk limits."""

    path: str
    template = "{path!r} does not fit the session's disk limits"


@templated
class FileExists(ServiceError):
    """The path already names a file or folder, and nothing may replace it."""

    path: str
    template = "{path!r} already exists"


@templated
class DirectoryNotEmpty(ServiceError):
    """A folder that still holds entries, where only an empty one will do."""

    path: str
    template = "{path!r} is a directory that is not empty"


@templated
class PathNotDirectory(ServiceError):
    """The path, or a component on its way, names a file where a folder is needed."""

    path: str
    template = "{path!r} is not a directory, or goes through a file"
