"""The exceptions lmc-runtime raises.

Errors in *user code* are never exceptions: they come back as computer-role
messages. The classes below are for failures of the runtime itself, and for
misuse of its API. Every one derives from :class:`LMCError`::

    LMCError
    ├── MessageError          a message is malformed (carries a precise reason)
    ├── UsageError            the API was used wrongly (closed Computer, wrong loop)
    ├── SandboxError          a session's sandbox could not be set up or used
    │   ├── SandboxUnavailable    bubblewrap is missing or cannot create namespaces
    │   └── UnsafePath            a path into a session could escape it (``..``, links)
    ├── StoreError            a thread store failed (I/O, corrupt records)
    │   ├── InvalidThreadId       a thread id is unsafe (path separators, ``..``)
    │   ├── ThreadNotFound        no thread has that id
    │   └── ThreadExists          a thread with that id already exists
    └── BackendError          a backend failed; dependency errors are chained
        ├── BackendUnavailable    the language cannot run on this machine
        ├── KernelStartError      a kernel or process did not come up in time
        └── KernelDied            a kernel or process ended unexpectedly

The executor turns :class:`MessageError` and :class:`BackendError` into
"not understood" or status replies, so an agent loop that only iterates over
``Computer.run`` never sees them.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "BackendUnavailable",
    "InvalidThreadId",
    "KernelDied",
    "KernelStartError",
    "LMCError",
    "MessageError",
    "SandboxError",
    "SandboxUnavailable",
    "StoreError",
    "ThreadExists",
    "ThreadNotFound",
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


class KernelDied(BackendError):
    """A kernel or interpreter process ended while it was needed."""

    def __init__(self, description: str, *, exit_code: int | None = None) -> None:
        super().__init__(description)
        self.description = description
        self.exit_code = exit_code


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
