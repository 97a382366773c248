"""The launcher a sandboxed session's backends start every process through.

Each command line becomes ``python _exec.py <limits> -- bwrap <namespaces> --
python _exec.py --sigint default --report -- argv``: the outer wrapper joins
the session's cgroup, sets the rlimits and cleans the environment on the host,
then starts bwrap and stays as its single-threaded parent (``--supervise``:
bwrap's ``--die-with-parent`` would otherwise follow the backend thread that
started it, not the runtime process); the inner one starts the interpreter with
SIGINT restored and stays its parent, to tell the outer one how it ended (bwrap
turns a death by signal N into exit status 128+N), so that the host sees an
interpreter killed by a signal as killed by that signal. Without bubblewrap
(the operator's explicit opt-out) only the outer wrapper runs.

A forked kernel's holder (:meth:`SandboxLauncher.fork`) has no wrapper inside,
and none stays above it: the fork server starts it (``_starter.py``, a fork of
itself rather than a new interpreter), the outer wrapper's code applies its
options, asks to die with the fork server's only thread and becomes bwrap
(``_exec.py --die-with-parent``), whose own ``--die-with-parent`` asks the same.
The fork server reaps it and reports its end, and ends with the runtime (one
Python process fewer per session, 4 MiB of PSS, and no interpreter started for
the wrapper).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from ..errors import ForkFailed
from ._exec import RLIMITS
from .bwrap import SANDBOX_GID, SANDBOX_UID, bwrap_args
from .egress_netns import egress_netns_command, require_egress_tools
from .forked import ForkedProcess
from .forks import ForkedKernel, ForkServer, forkable
from .holder import HOLDER, Start, end_holder, start_holder
from .identity import Identity
from .network import netns_command, require_network_tools
from .policy import allowed
from .view import SandboxView

__all__ = ["EXEC_WRAPPER", "SandboxLauncher"]

logger = logging.getLogger(__name__)

#: The exec wrapper script (stdlib only, run with ``python -I -S``).
EXEC_WRAPPER = Path(__file__).with_name("_exec.py")

#: Variables a backend's own machinery sets that must not reach the sandbox.
#: ``JPY_PARENT_PID`` makes ipykernel poll its parent, which is PID 1 in there.
_DENIED = ("JPY_PARENT_PID",)


@dataclass(frozen=True)
class SandboxLauncher:
    """Wraps argv in the session's limits and, when ``bwrap`` is set, its namespaces."""

    bwrap: str | None
    cgroup_procs: tuple[Path, ...] = ()
    rlimits: Mapping[str, int] = field(default_factory=dict)
    env_allowlist: tuple[str, ...] = ()
    #: Names the session's environment sets itself (kept even if the host has them).
    session_names: frozenset[str] = frozenset()
    readonly: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    #: Host-only folders bound read-only (see :func:`~.bwrap.bwrap_args`).
    control: tuple[Path, ...] = ()
    network: bool = False
    #: Under an egress policy (with ``network``): where the helper hands the
    #: namespace's sockets to the server (see :mod:`.egress_netns`).
    egress_handover: Path | None = None
    #: The host user the sandbox runs as (None: the server's own user).
    identity: Identity | None = None
    #: The size of each memory-backed folder the code can write (None: no cap).
    tmp_bytes: int | None = None
    #: Forks Python kernels into their sandboxes (see :mod:`.forks`); None: never.
    forks: ForkServer | None = None
    #: The folder every process starts in, entered inside the sandbox as its user
    #: (``_exec.py --chdir``); the host starts them in a folder only it writes.
    cwd: Path | None = None
    #: The home, runtime folder and accounts the code sees (with bubblewrap).
    view: SandboxView | None = None

    def places(self, cwd: Path) -> bool:
        """Whether the processes it wraps enter ``cwd`` themselves (see ``cwd``)."""
        return self.cwd is not None and Path(cwd) == self.cwd

    def inside(self, path: Path) -> str:
        """Where the processes it starts see the host's ``path`` (see :mod:`.view`)."""
        if self.view is not None and self.bwrap is not None:
            return self.view.inside(path)
        return str(path)

    def _translated(self, argv: Sequence[str]) -> list[str]:
        """``argv`` with the host's paths as the processes see them."""
        if self.view is not None and self.bwrap is not None:
            return [self.view.translate(argument) for argument in argv]
        return list(argv)

    def _inside_cwd(self) -> str | None:
        """``cwd`` as the processes see it (inside the sandbox's view, if any)."""
        return self.inside(self.cwd) if self.cwd is not None else None

    def _chdir(self) -> list[str]:
        cwd = self._inside_cwd()
        return ["--chdir", cwd] if cwd is not None else []

    def _wrapper(self) -> list[str]:
        return [sys.executable, "-I", "-S", str(EXEC_WRAPPER)]

    def _removed(self, name: str) -> bool:
        """Whether the host's variable ``name`` is kept out of the sandbox."""
        return name in _DENIED or not (
            allowed(name, self.env_allowlist) or name in self.session_names
        )

    def sandbox_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """What is left of ``env`` inside the sandbox (as the outer wrapper leaves it)."""
        return {
            name: value
            for name, value in env.items()
            if name not in _DENIED and not (name in os.environ and self._removed(name))
        }

    def host_options(self) -> list[str]:
        """The outer wrapper's options: cgroup, rlimits, environment."""
        options: list[str] = []
        for procs in self.cgroup_procs:
            options += ["--cgroup", str(procs)]
        for name, value in sorted(self.rlimits.items()):
            options += ["--rlimit", f"{name}={value}"]
        for name in sorted(os.environ):
            if self._removed(name):
                options += ["--unset", name]
        for name in _DENIED:
            options += ["--unset", name]
        if self.identity is not None:
            options += ["--user", f"{self.identity.uid}:{self.identity.gid}"]
        return options

    @property
    def supervises(self) -> bool:
        """Whether what it starts ends with the process that started it, however that
        process ends: with bubblewrap, each sandbox is held by a supervisor that kills
        it when the runtime process ends (``_exec.py --supervise``), or (a forked
        kernel's, see the module) is a child of the runtime's main thread, which
        ends only with the process, and dies with it; so a Computer needs no watcher
        of its own (:class:`~lmc_runtime.lifeline.Lifeline`) for it."""
        return self.bwrap is not None

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The command line that runs ``argv`` inside this session's sandbox."""
        return self._wrap(argv, [])

    def wrap_reading(self, argv: Sequence[str], stdin: Path) -> list[str]:
        """:meth:`wrap`, with the FIFO at the host's ``stdin`` as the stdin of
        ``argv``, opened by the wrapper that starts it (inside the sandbox, so that
        the descriptor's name is the sandbox's path, not the host's)."""
        return self._wrap(argv, ["--stdin", self.inside(stdin)])

    def _wrap(self, argv: Sequence[str], options: list[str]) -> list[str]:
        argv = self._translated(argv)
        if self.bwrap is None:
            host = self.host_options()
            return [*self._wrapper(), *host, *self._chdir(), *options, "--", *argv]
        inner = [*self._wrapper(), "--sigint", "default", "--report", *self._chdir(), *options]
        return self._in_bwrap([*inner, "--", *argv])

    def _in_bwrap(
        self, inner: Sequence[str], *, info_fd: int | None = None, parent: int | None = None
    ) -> list[str]:
        """The command line that has bwrap run ``inner`` in this session's sandbox
        (and report it on ``info_fd``, if given). With ``parent`` (the pid of the
        process that starts it, whose thread lives as long as the sandbox), the
        outer wrapper becomes bwrap, which dies with that thread (but where a
        network helper starts bwrap: that keeps its supervisor)."""
        assert self.bwrap is not None, "only with bubblewrap"
        outer = [*self._wrapper(), *self.host_options()]
        sandbox = bwrap_args(
            self.bwrap,
            readonly=self.readonly,
            hidden=self.hidden,
            writable=self.writable,
            control=self.control,
            network=self.network,
            tmp_bytes=self.tmp_bytes,
            view=self.view,
        )
        if info_fd is not None:
            sandbox += ["--info-fd", str(info_fd)]
        above = ["--supervise", str(os.getpid())]
        if self.network and self.egress_handover is not None:  # no way out but the gateway
            helper = egress_netns_command(require_egress_tools(), self.egress_handover)
            supervised = [*outer, "--sigint", "ignore", *above]
            return [*supervised, "--", *helper, "--", *sandbox, "--", *inner]
        if self.network:  # a namespace of its own, set up by a helper that starts bwrap
            helper = netns_command(require_network_tools())
            supervised = [*outer, "--sigint", "ignore", *above]
            return [*supervised, "--", *helper, "--", *sandbox, "--", *inner]
        if parent is not None:  # bwrap is that process's child, dying with its thread
            above = ["--die-with-parent", str(parent)]
        supervised = [*outer, "--sigint", "ignore", "--bwrap-env", *above]
        return [*supervised, "--", *sandbox, "--", *inner]

    def _holder_command(self, parent: int) -> Callable[[int], list[str]]:
        """A forked kernel's holder, started by the fork server's starter
        ``parent``: no wrapper inside (bwrap runs it directly), nor one above (it
        becomes bwrap, which dies with the starter, whose only thread lives as
        long as it, and which dies with the fork server)."""

        def command(info_fd: int) -> list[str]:
            return self._in_bwrap(list(HOLDER), info_fd=info_fd, parent=parent)

        return command

    @staticmethod
    def _start_by(forks: ForkServer) -> Start:
        async def start(
            argv: list[str], env: Mapping[str, str], cwd: str, fds: dict[int, int]
        ) -> ForkedProcess:
            return ForkedProcess(*await forks.start(argv, env, cwd, fds))

        return start

    async def fork(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str, stdout: int, stderr: int
    ) -> ForkedKernel | None:
        """``python SCRIPT ...`` forked by the fork server into a sandbox of its own
        (a holder's, started through :meth:`wrap`); None when it cannot be, and the
        caller starts ``wrap(argv)`` instead."""
        if self.forks is None or self.bwrap is None or not forkable(argv):
            return None

        forks = self.forks
        try:
            # A holder of its own: the kernel is born in its PID namespace and only
            # then enters its others (_child.py), so no other code may be there.
            holder, holder_pidfd = await start_holder(
                self._holder_command(await forks.parent()), env, "/", stderr, self._start_by(forks)
            )
        except ForkFailed as exc:
            logger.warning("starting the kernel the usual way: %s", exc)
            return None
        request = {
            "argv": self._translated(argv),
            "env": self.sandbox_env(env),
            "cwd": self._inside_cwd() or self.inside(Path(cwd)),
            "cgroups": [str(procs) for procs in self.cgroup_procs],
            "rlimits": {RLIMITS[name]: value for name, value in self.rlimits.items()},
            "uid": SANDBOX_UID,
            "gid": SANDBOX_GID,
        }
        try:
            pid, pidfd, broker = await self.forks.spawn(request, holder_pidfd, stdout, stderr)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(end_holder, holder, holder_pidfd)
            os.close(holder_pidfd)
            if not isinstance(exc, ForkFailed):
                raise
            logger.warning("starting the kernel the usual way: %s", exc)
            return None
        return ForkedKernel(pid, pidfd, broker, holder, holder_pidfd)
