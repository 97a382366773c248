"""The exceptions lmc-runtime raises.

Errors in *user code* are never exceptions: they come back as computer-role
messages. The classes below are for failures of the runtime itself, and for
misuse of its API. Every one derives from :class:`LMCError`::

    LMCError
    ├── MessageError          a message is malformed (carries a precise reason)
    ├── UsageError            the API was used wrongly (closed Computer, wrong loop)
    │   ├── ArgumentTypeError     an argument of the wrong type (also a TypeError)
    │   └── ArgumentValueError    an argument with a value it does not take (a ValueError)
    ├── MissingExtra          an optional part's packages are not installed (an ImportError)
    ├── SandboxError          a session's sandbox could not be set up or used
    │   ├── ForkFailed            a kernel could not be forked into its sandbox
    │   ├── SandboxUnavailable    bubblewrap is missing or cannot create namespaces
    │   └── UnsafePath            a path into a session could escape it (``..``, links)
    ├── StoreError            a thread store failed (I/O, corrupt records)
    │   ├── InvalidThreadId       a thread id is unsafe (path separators, ``..``)
    │   ├── ThreadNotFound        no thread has that id
    │   └── ThreadExists          a thread with that id already exists
    ├── BackendError          a backend failed; dependency errors are chained
    │   ├── BackendUnavailable    the language cannot run on this machine
    │   ├── KernelStartError      a kernel or process did not come up in time
    │   ├── KernelDied            a kernel or process ended unexpectedly
    │   └── GatewayError          a Jupyter gateway refused, failed or went away
    └── ServiceError          ``lmc serve`` refuses a request (one class per reason)
        ├── SessionNotFound, SessionEnded, SessionLost, SessionBusy, SessionStartFailed
        ├── CapacityExceeded, LimitTooHigh, NetworkNotAllowed
        ├── UnknownLanguage, LanguageUnavailable, ShuttingDown, ServiceUnavailable
        ├── InvalidRequest, MalformedRequest, RequestTooLarge
        ├── TokenRejected, OriginNotAllowed, HostNotAllowed
        └── BadPath, SessionFileNotFound, NotARegularFile, PathIsDirectory,
            PathRefused, DiskLimitExceeded, FileExists, DirectoryNotEmpty,
            PathNotDirectory
    RemoteError           a remote ``lmc serve`` refused a client's request
        ├── RemoteUnauthorized, RemoteSessionNotFound (RemoteSessionEnded,
        │   RemoteSessionLost), RemoteBusy
        ├── RemoteCapacityExceeded, RemoteTooLarge, RemoteUnavailable
        ├── RemotePathError (RemoteFileNotFound, RemoteFileExists)
        └── ConnectionLost        the connection broke mid-request

The executor turns :class:`MessageError` and :class:`BackendError` into
"not understood" or status replies, so an agent loop that only iterates over
``Computer.run`` never sees them.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "BackendError",
    "BackendUnavailable",
    "BadPath",
    "CapacityExceeded",
    "ConnectionLost",
    "DirectoryNotEmpty",
    "DiskLimitExceeded",
    "FileExists",
    "ForkFailed",
    "GatewayError",
    "HostNotAllowed",
    "InvalidRequest",
    "InvalidThreadId",
    "KernelDied",
    "KernelStalled",
    "KernelStartError",
    "LMCError",
    "LanguageUnavailable",
    "LimitTooHigh",
    "MalformedRequest",
    "MessageError",
    "MissingExtra",
    "NetworkNotAllowed",
    "NotARegularFile",
    "OriginNotAllowed",
    "PathIsDirectory",
    "PathNotDirectory",
    "PathRefused",
    "RemoteBusy",
    "RemoteCapacityExceeded",
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
    "RequestTooLarge",
    "SandboxError",
    "SandboxUnavailable",
    "ServiceError",
    "ServiceUnavailable",
    "SessionBusy",
    "SessionEnded",
    "SessionFileNotFound",
    "SessionLost",
    "SessionNotFound",
    "SessionStartFailed",
    "ShuttingDown",
    "StoreError",
    "ThreadExists",
    "ThreadNotFound",
    "TokenRejected",
    "UnknownLanguage",
    "UnsafePath",
    "UsageError",
]


class LMCError(Exception):
    """Base class of every exception raised by lmc-runtime."""


class MessageError(LMCError, ValueError):
    """A message could not be parsed; ``reason`` says exactly why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UsageError(LMCError, RuntimeError):
    """The API was used in a way it does not support."""


class MissingExtra(LMCError, ImportError):
    """``what`` needs an optional extra of the package that is not installed.

    Its text is one line naming the command that installs it, e.g. ``lmc serve needs
    the [serve] extra: pip install 'lmc-runtime[serve]'``.
    """

    def __init__(self, what: str, extra: str, *, missing: str | None = None) -> None:
        super().__init__(
            f"{what} needs the [{extra}] extra: pip install 'lmc-runtime[{extra}]'",
            name=missing,
        )
        self.what = what
        self.extra = extra


class ArgumentTypeError(UsageError, TypeError):
    """An argument of the Python API has a type it does not take (a programmer's
    mistake, raised at once, never sent to the model as a reply)."""


class ArgumentValueError(UsageError, ValueError):
    """An argument of the Python API has a value it does not take."""


class BackendError(LMCError):
    """A backend failed for a reason outside the user's code."""


class BackendUnavailable(BackendError):
    """The language has no working backend on this machine."""

    def __init__(self, language: str, reason: str) -> None:
        super().__init__(f"{language} is not available: {reason}")
        self.language = language
        self.reason = reason


class KernelStartError(BackendError):
    """A kernel or interpreter process did not start, or did not become ready."""


class KernelStalled(KernelStartError):
    """A starting kernel answered on one channel but stayed silent on another.

    Its messages show it alive, but a reply path is stuck: a fresh kernel is
    tried once more before the start is given up.
    """


class KernelDied(BackendError):
    """A kernel or interpreter process ended while it was needed."""

    def __init__(self, description: str, *, exit_code: int | None = None) -> None:
        super().__init__(description)
        self.description = description
        self.exit_code = exit_code


class GatewayError(BackendError):
    """A Jupyter gateway (Kernel Gateway, Enterprise Gateway) refused a request,
    could not be reached, or lost the kernel; ``status`` is its HTTP status when
    it answered."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class StoreError(LMCError):
    """A thread store could not do what was asked."""


class InvalidThreadId(StoreError, ValueError):
    """A thread id that could escape the store or is otherwise unusable."""

    def __init__(self, thread_id: object, reason: str) -> None:
        super().__init__(f"invalid thread id {thread_id!r}: {reason}")
        self.thread_id = thread_id
        self.reason = reason


class ThreadNotFound(StoreError, LookupError):
    """No thread has this id."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"no thread {thread_id!r}")
        self.thread_id = thread_id


class ThreadExists(StoreError):
    """A thread with this id already exists."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread {thread_id!r} already exists")
        self.thread_id = thread_id


class SandboxError(LMCError):
    """A session's sandbox could not be set up, used or torn down."""


class ForkFailed(SandboxError):
    """A kernel could not be forked into its sandbox by the fork server (the
    runtime then starts it the usual way)."""


class SandboxUnavailable(SandboxError):
    """Bubblewrap is missing or cannot create the namespaces a sandbox needs."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the sandbox cannot run here: {reason}")
        self.reason = reason


class UnsafePath(SandboxError, ValueError):
    """A path into a session's directory that could lead outside it."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"unsafe path {path!r}: {reason}")
        self.path = path
        self.reason = reason


class ServiceError(LMCError):
    """A request the service refuses; ``message`` is a sentence for its client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


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


class TokenRejected(ServiceError):
    """A request carries no bearer token, or the wrong one."""


class OriginNotAllowed(ServiceError):
    """A web page on another origin made the request on its own."""

    def __init__(self, origin: str | None) -> None:
        super().__init__(f"origin {origin!r} is not allowed")
        self.origin = origin


class HostNotAllowed(ServiceError):
    """Without a token, a request named a Host that is not a loopback name."""

    def __init__(self, host: str) -> None:
        super().__init__(f"without a token only loopback Host names are served, not {host!r}")
        self.host = host


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


class ConnectionLost(RemoteError, ConnectionError):
    """The connection to the server broke (``session_id`` names the session, which
    may still be alive: ``RemoteComputer.attach`` reattaches to it)."""

    def __init__(self, message: str, session_id: str | None) -> None:
        super().__init__(message, status=None, code="connection_lost")
        self.session_id = session_id


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
