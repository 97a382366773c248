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
    └── ServiceError          ``lmc serve`` or ``lmc mcp`` refuses a request
        └── TokenRejected, OriginNotAllowed, HostNotAllowed
            (the service's other refusals are in :mod:`lmc_runtime.service.errors`)
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

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "BackendError",
    "BackendUnavailable",
    "ConnectionLost",
    "ForkFailed",
    "GatewayError",
    "HostNotAllowed",
    "InvalidThreadId",
    "KernelDied",
    "KernelStalled",
    "KernelStartError",
    "LMCError",
    "MessageError",
    "MissingExtra",
    "OriginNotAllowed",
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
    "SandboxError",
    "SandboxUnavailable",
    "ServiceError",
    "StoreError",
    "ThreadExists",
    "ThreadNotFound",
    "TokenRejected",
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
