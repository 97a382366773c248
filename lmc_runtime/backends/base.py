"""The interface every language backend implements: a :class:`Backend` says whether
its language runs here and starts :class:`Session` objects, each one persistent
interpreter that runs code and streams computer-role messages back."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from anyio.abc import TaskGroup

from ..config import DEFAULT_INPUT_SECONDS, DEFAULT_INTERRUPT_GRACE, InputCallback, Timeouts
from ..lifeline import Lifeline
from ..media.launch import Launch
from ..messages import Message

if TYPE_CHECKING:
    from .checkpoints import Origin

__all__ = [
    "Availability",
    "Backend",
    "EndsAsync",
    "ExecutionOptions",
    "ForkingLauncher",
    "KernelProcess",
    "Launcher",
    "PlacingLauncher",
    "Session",
    "SessionSettings",
    "ViewingLauncher",
]


@dataclass(frozen=True)
class Availability:
    """Whether a language can run on this machine, and if not, why."""

    available: bool
    reason: str | None = None

    @classmethod
    def yes(cls) -> Availability:
        return cls(True)

    @classmethod
    def no(cls, reason: str) -> Availability:
        return cls(False, reason)


@runtime_checkable
class Launcher(Protocol):
    """Wraps the command line of every process a session starts (the sandbox of
    ``lmc serve`` is one: ``bwrap ... -- argv``)."""

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The command line that runs ``argv`` under this launcher."""
        ...


@runtime_checkable
class PlacingLauncher(Launcher, Protocol):
    """A launcher whose processes enter the session's folder themselves, inside
    its sandbox: the host starts them in ``work_dir``, a folder only it writes,
    and never follows a link the code planted on the way to its own folder."""

    def places(self, cwd: Path) -> bool:
        """Whether the processes it wraps start in ``cwd`` of their own accord."""
        ...


@runtime_checkable
class ViewingLauncher(Launcher, Protocol):
    """A launcher whose processes see the host's folders at other paths (a
    sandbox's): a path the host hands them (a connection file, a FIFO, where to
    bind a socket) is given as they see it. Command lines are translated by
    :meth:`wrap` itself; a path handed in any other way, by :meth:`inside`."""

    def inside(self, path: Path) -> str:
        """Where the processes it starts see the host's ``path``."""
        ...

    def wrap_reading(self, argv: Sequence[str], stdin: Path) -> list[str]:
        """:meth:`wrap`, with the FIFO at the host's ``stdin`` opened for reading as
        the stdin of ``argv`` by the launcher's own wrapper, inside: a descriptor the
        host opened would name the host's path in ``/proc``."""
        ...


class KernelProcess(Protocol):
    """A started interpreter as a provisioner keeps it: what it uses of ``Popen``."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, signum: int) -> None: ...


@runtime_checkable
class EndsAsync(Protocol):
    """A :class:`KernelProcess` whose end is awaited in the event loop (after
    :meth:`ended`, ``wait`` returns at once).

    ``ends_its_tree``: whether its end ends every process it started, wherever
    they went (it is the last of a PID namespace that ends with it), so that no
    one needs to look for them among the host's processes."""

    ends_its_tree: bool

    async def ended(self) -> None: ...


@runtime_checkable
class ForkingLauncher(Launcher, Protocol):
    """A launcher that can also start some command lines faster than by running
    them: forked from a process that has done their imports already."""

    async def fork(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, stdout: int, stderr: int
    ) -> KernelProcess | None:
        """``argv`` started under this launcher, or None if it cannot be forked
        (the caller then runs :meth:`wrap`'s command line)."""
        ...


@dataclass(frozen=True)
class SessionSettings:
    """How to start a session: where it runs, with what environment and launcher.

    ``work_dir`` holds control files only the host writes; ``shared_dir``, if set,
    is where the interpreter creates files, which the host reaches only through
    :class:`~lmc_runtime.hostfs.HostDir`. ``lifeline``, if set, holds every
    interpreter process started, so that none outlives the process that owns it.
    """

    cwd: Path
    work_dir: Path
    env: Mapping[str, str] = field(default_factory=dict)
    timeouts: Timeouts = field(default_factory=Timeouts)
    launcher: Launcher | None = None
    shared_dir: Path | None = None
    lifeline: Lifeline | None = None
    #: Where the first interpreter comes from, if not from nothing (a fork's checkpoint).
    origin: Origin | None = None

    @property
    def host_cwd(self) -> Path:
        """Where the host starts a process of this session: ``cwd``, unless the
        launcher enters it itself (see :class:`PlacingLauncher`)."""
        launcher = self.launcher
        placed = isinstance(launcher, PlacingLauncher) and launcher.places(self.cwd)
        return self.work_dir if placed else self.cwd

    @property
    def interpreter_dir(self) -> Path:
        """Where the interpreter may create files: ``shared_dir`` or ``work_dir``."""
        return self.shared_dir if self.shared_dir is not None else self.work_dir

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as this session must run it: through the launcher, if any."""
        return self.launcher.wrap(argv) if self.launcher is not None else list(argv)

    def inside(self, path: Path) -> str:
        """Where this session's processes see the host's ``path`` (see
        :class:`ViewingLauncher`): the path itself, unless a sandbox binds it elsewhere."""
        launcher = self.launcher
        return launcher.inside(path) if isinstance(launcher, ViewingLauncher) else str(path)

    def reading(self, argv: Sequence[str], stdin: Path) -> list[str] | None:
        """:meth:`command` with the FIFO ``stdin`` opened as the stdin of ``argv``
        by the launcher (see :meth:`ViewingLauncher.wrap_reading`); None when the
        launcher cannot, and the caller hands the process a descriptor itself."""
        launcher = self.launcher
        if isinstance(launcher, ViewingLauncher):
            return launcher.wrap_reading(argv, stdin)
        return None

    def launch(self) -> Launch:
        """How a media helper (Chromium, the SVG worker) starts as this session's
        processes do: its launcher, folders, cwd and environment."""
        return Launch(
            work_dir=self.work_dir,
            shared_dir=self.interpreter_dir,
            cwd=self.host_cwd,
            env=self.env,
            wrap=self.command,
            lifeline=self.lifeline,
        )


@dataclass(frozen=True)
class ExecutionOptions:
    """Settings for one execution.

    ``env`` holds variables set for this execution only: the backend sets them
    before the code runs and restores the interpreter's environment after it
    (a variable that was unset is unset again), whatever way the run ends.
    """

    reply_to: str
    timeout: float | None = None
    interrupt_grace: float = DEFAULT_INTERRUPT_GRACE
    input_timeout: float | None = DEFAULT_INPUT_SECONDS
    on_input: InputCallback | None = None
    track_lines: bool = True
    env: Mapping[str, str] = field(default_factory=dict)
    #: A run of the runtime's own, out of the interpreter's history (a checkpoint's).
    hidden: bool = False


@runtime_checkable
class Session(Protocol):
    """One persistent interpreter for one language."""

    def execute(self, code: str, options: ExecutionOptions) -> AsyncIterator[Message]:
        """Run ``code``; yield computer messages, ending with ``active_line`` null.

        Errors in the code, timeouts, interrupts and crashes are messages.
        Closing the iterator early interrupts the code.
        """
        ...

    async def interrupt(self) -> None:
        """Ask the running execution to stop (the timeout ladder follows)."""
        ...

    async def restart(self) -> None:
        """Restart the interpreter; its state is lost."""
        ...

    async def aclose(self) -> None:
        """Stop the interpreter and every process it started."""
        ...


@runtime_checkable
class Backend(Protocol):
    """A language's entry point: availability and session start.

    The registry names the language and its aliases; a backend does not.
    """

    def availability(self) -> Availability:
        """Whether this language can run here; cheap, starts nothing."""
        ...

    async def start(self, task_group: TaskGroup, settings: SessionSettings) -> Session:
        """Start a session whose background tasks run in ``task_group``."""
        ...
