"""What the runtime raises in process: the base :class:`LMCError`, misuse of the API,
and failures of messages, backends, sandboxes and thread stores (see the tree in
:mod:`lmc_runtime.errors`)."""

from __future__ import annotations

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "BackendError",
    "BackendUnavailable",
    "ForkFailed",
    "GatewayError",
    "InvalidThreadId",
    "KernelDied",
    "KernelStalled",
    "KernelStartError",
    "LMCError",
    "MessageError",
    "MissingExtra",
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
