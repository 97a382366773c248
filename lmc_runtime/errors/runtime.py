"""What the runtime raises in process: the base :class:`LMCError`, misuse of the API,
and failures of messages, backends, sandboxes and thread stores (see the tree in
:mod:`lmc_runtime.errors`)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import ClassVar, TypeVar, dataclass_transform

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "BackendError",
    "BackendUnavailable",
    "CheckpointFailed",
    "CheckpointNotFound",
    "CheckpointsUnsupported",
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

    #: A :func:`templated` class's message: ``str.format`` of its fields by name.
    template: ClassVar[str] = ""

    def __post_init__(self) -> None:
        super().__init__(self.template.format_map(vars(self)))


_Error = TypeVar("_Error", bound=LMCError)


@dataclass_transform(eq_default=False)
def templated(cls: type[_Error]) -> type[_Error]:
    """An error class of fields and a message: its constructor takes the fields its
    body annotates (in order, ``_: KW_ONLY`` before keyword-only ones), keeps each
    as an attribute, and says its :attr:`~LMCError.template` filled with them.

    Equality, hashing and ``repr`` stay those of exceptions.
    """
    return dataclass(cls, eq=False, repr=False)


@templated
class MessageError(LMCError, ValueError):
    """A message could not be parsed; ``reason`` says exactly why."""

    reason: str
    template = "{reason}"


class UsageError(LMCError, RuntimeError):
    """The API was used in a way it does not support."""


class CheckpointsUnsupported(UsageError):
    """Checkpoints, rollback and fork were asked of a language whose interpreter
    cannot be copied (shell, JavaScript, ...), or of one running where it cannot."""


class CheckpointNotFound(UsageError, LookupError):
    """No checkpoint has that id, or its frozen process is gone."""


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


@templated
class BackendUnavailable(BackendError):
    """The language has no working backend on this machine."""

    language: str
    reason: str
    template = "{language} is not available: {reason}"


class KernelStartError(BackendError):
    """A kernel or interpreter process did not start, or did not become ready."""


class CheckpointFailed(BackendError):
    """The interpreter did not take a checkpoint (its copy did not come up)."""


class KernelStalled(KernelStartError):
    """A starting kernel answered on one channel but stayed silent on another.

    Its messages show it alive, but a reply path is stuck: a fresh kernel is
    tried once more before the start is given up.
    """


@templated
class KernelDied(BackendError):
    """A kernel or interpreter process ended while it was needed."""

    description: str
    _: KW_ONLY
    exit_code: int | None = None
    template = "{description}"


@templated
class GatewayError(BackendError):
    """A Jupyter gateway (Kernel Gateway, Enterprise Gateway) refused a request,
    could not be reached, or lost the kernel; ``status`` is its HTTP status when
    it answered."""

    message: str
    _: KW_ONLY
    status: int | None = None
    template = "{message}"


class StoreError(LMCError):
    """A thread store could not do what was asked."""


@templated
class InvalidThreadId(StoreError, ValueError):
    """A thread id that could escape the store or is otherwise unusable."""

    thread_id: object
    reason: str
    template = "invalid thread id {thread_id!r}: {reason}"


@templated
class ThreadNotFound(StoreError, LookupError):
    """No thread has this id."""

    thread_id: str
    template = "no thread {thread_id!r}"


@templated
class ThreadExists(StoreError):
    """A thread with this id already exists."""

    thread_id: str
    template = "thread {thread_id!r} already exists"


class SandboxError(LMCError):
    """A session's sandbox could not be set up, used or torn down."""


class ForkFailed(SandboxError):
    """A kernel could not be forked into its sandbox by the fork server (the
    runtime then starts it the usual way)."""


@templated
class SandboxUnavailable(SandboxError):
    """Bubblewrap is missing or cannot create the namespaces a sandbox needs."""

    reason: str
    template = "the sandbox cannot run here: {reason}"


@templated
class UnsafePath(SandboxError, ValueError):
    """A path into a session's directory that could lead outside it."""

    path: str
    reason: str
    template = "unsafe path {path!r}: {reason}"
