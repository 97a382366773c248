"""One session's isolation: its directories, its launcher, its cgroup or rlimits."""

from __future__ import annotations

import dataclasses
import logging
import os
import uuid
from pathlib import Path
from typing import Any

import anyio

from ..computer import Computer
from ..config import Limits, Timeouts
from ..egress.handover import EgressAttacher, Handover
from ..errors import SandboxUnavailable, UsageError
from ..hostfs import remove_tree
from .bwrap import exposed_by
from .cgroups import Cgroup, create_cgroup
from .computer import sandbox_computer
from .disk import WorkDisk
from .disk_images import DiskImages
from .egress_netns import PROXY_ENV, session_handover
from .forks import ForkServer
from .guard import Guard
from .hostprep import unreachable_paths
from .hostview import HostView
from .identity import Identity, Lease, UidRange, UserReaper
from .launch import SandboxLauncher
from .layout import OnDisk, make_disk_layout
from .policy import SandboxPolicy, fallback_rlimits
from .stale import clean_session_dir, remove_cgroup
from .strays import Census, TreeCensus, UserCensus
from .usage import Usage, measure_usage
from .view import (
    SANDBOX_CONTROL,
    SANDBOX_HOME,
    SANDBOX_RUNTIME,
    SandboxView,
    view_env,
)

__all__ = ["Sandbox", "Usage"]

logger = logging.getLogger(__name__)


class Sandbox:
    """One session's isolation: directories, bwrap launcher, cgroup or rlimits.

    ``enabled=False`` is the operator's explicit opt-out: the same directories,
    cgroup or rlimits and environment, but no bubblewrap.
    """

    def __init__(
        self,
        root: Path,
        policy: SandboxPolicy,
        *,
        enabled: bool = True,
        uids: UidRange | None = None,
        forks: ForkServer | None = None,
        host: HostView | None = None,
        egress: EgressAttacher | None = None,
        disk_images: DiskImages | None = None,
    ) -> None:
        """``uids``: where a server running as root leases the session's host uid
        (by default the range ``lmc setup`` reserved); ``forks``: the fork server
        that starts its Python kernels (None: they start the usual way); ``host``:
        where it finds what sandboxes on this host share (None: looked up anew);
        ``egress``: the gateway that serves a session under an egress policy;
        ``disk_images``: where its disk's filesystem is copied from (None: it
        is formatted for it)."""
        self.root = Path(root).absolute()
        self.policy = policy
        self.enabled = enabled
        self._forks = forks
        self._host = host or HostView(ttl=0)
        self._uids = uids
        self._lease: Lease | None = None
        self._disk = WorkDisk(
            self.root / "disk", self.root / "disk.img", policy.limits.disk_bytes, disk_images
        )
        self._cgroup: Cgroup | None = None
        self._limits_by = "not started"
        self._launcher: SandboxLauncher | None = None
        self._computers: list[Computer] = []
        self._taken: set[Path] = set()  # the folders its Computers' interpreters use
        self._egress = egress
        self._handover: Handover | None = None

    # The layout: everything the code can write lives on the session's disk
    # (the size-capped image when running as root), so the disk limit counts it
    # all; the host's own files live in ``control/``, which the code only reads.

    #: The session's private working directory: ``/home/user`` inside (.view).
    work_dir = OnDisk("work")
    #: Where interpreters create files of their own: unix sockets, screenshots.
    shared_dir = OnDisk("shared")
    #: Where whole outputs past the budget are saved (host side only, on the disk).
    output_dir = OnDisk("output")
    #: The interpreters' own files (profiles, caches, packages): ``/run/lmc``.
    runtime_dir = OnDisk("runtime")

    @property
    def view(self) -> SandboxView:
        """The home, runtime folder and accounts the code sees inside the sandbox."""
        control = self.control_dir
        passwd, group = control / "passwd", control / "group"
        return SandboxView(
            self.work_dir,
            self.runtime_dir,
            passwd,
            group,
            control,
            self.shared_dir,
            trust=self.policy.trust,
            resolv=None if isinstance(self.policy.network, bool) else control / "resolv.conf",
        )

    #: The host's files for the session: connection files, cells, pages, FIFOs,
    #: logs, and the kernels' sockets once adopted (so on the same filesystem as
    #: ``shared_dir``). Only the host writes there; the sandbox sees it read-only.
    control_dir = OnDisk("control")

    @property
    def identity(self) -> Identity | None:
        """The host user the session's processes run as (None: the server's own)."""
        return self._lease.identity if self._lease is not None else None

    @property
    def owner(self) -> tuple[int, int] | None:
        """(uid, gid) files the host makes in the working directory belong to."""
        identity = self.identity
        return (identity.uid, identity.gid) if identity is not None else None

    @property
    def launcher(self) -> SandboxLauncher:
        if self._launcher is None:
            raise UsageError("start the sandbox first: `await sandbox.start()`")
        return self._launcher

    async def start(self) -> None:
        """Create the directories, the disk limit and the cgroup; build the launcher."""
        host = await self._host.facts(sandboxed=self.enabled)
        bwrap = host.bwrap
        if self.enabled:
            if not host.availability.available:
                raise SandboxUnavailable(host.availability.reason or "unknown reason")
            bound = exposed_by(self.root, host.system)
            if bound is not None:
                raise SandboxUnavailable(
                    f"the session directory {self.root} is inside {bound}, which every "
                    "sandbox sees: choose a data directory outside it"
                )
        if os.path.lexists(self.root):  # left by a runtime that was killed
            logger.warning("cleaning up the stale session directory %s", self.root)
            await clean_session_dir(self.root)
        if self.enabled and os.geteuid() == 0:
            reached = [*host.system, *self._environment_paths(), self.root]
            blocked = await anyio.to_thread.run_sync(unreachable_paths, reached)
            if blocked:
                raise SandboxUnavailable(
                    f"sandbox users cannot pass through {blocked[0]} to reach their files: "
                    "run `lmc setup` as root, or give that folder search permission for "
                    "others (chmod o+x), or choose a data directory they can reach"
                )
            uids = self._uids
            if uids is None:
                uids = await anyio.to_thread.run_sync(UidRange.reserved)
            self._lease = await anyio.to_thread.run_sync(uids.lease)
        await anyio.to_thread.run_sync(self._make_layout)
        self._handover = session_handover(self.root, self.policy.network, self._egress, self)
        await self._disk.setup()
        await anyio.to_thread.run_sync(self._make_disk_layout)
        limits = self.policy.limits
        name = f"lmc-{self.root.name}-{uuid.uuid4().hex[:8]}"
        self._cgroup, self._limits_by = create_cgroup(name, limits)
        controllers = self._cgroup.controllers if self._cgroup is not None else ()
        rlimits = fallback_rlimits(
            limits, controllers, own_uid=self.identity is not None, root=os.geteuid() == 0
        )
        if rlimits.keys() - {"fsize"}:
            self._limits_by += "; rlimits " + ", ".join(sorted(rlimits))
        env = self.code_env()
        self._launcher = SandboxLauncher(
            bwrap=bwrap,
            cgroup_procs=self._cgroup.procs_files if self._cgroup is not None else (),
            rlimits=rlimits,
            env_allowlist=self.policy.env_allowlist,
            session_names=frozenset(env),
            readonly=(*host.system, *self._environment_paths()),
            hidden=host.hidden,
            # With bubblewrap, the view binds them where the code sees them.
            writable=() if self.enabled else (self.work_dir, self.shared_dir),
            control=() if self.enabled else (self.control_dir,),
            network=self.policy.network is not False,
            egress_handover=self._handover.path if self._handover is not None else None,
            identity=self.identity,
            tmp_bytes=limits.disk_bytes,
            forks=self._forks if self._may_fork(bwrap) else None,
            view=self.view if self.enabled else None,
        )

    def _environment_paths(self) -> list[Path]:
        """The environment's folder, bound read-only where it is on the host."""
        environment = self.policy.environment
        return [environment.root] if environment is not None else []

    def _may_fork(self, bwrap: str | None) -> bool:
        """Whether kernels may be forked: the fork server's are the server's
        Python's, so never in a session of an environment."""
        own = self.policy.environment is None
        return own and bwrap is not None and self.identity is not None

    def _make_layout(self) -> None:
        """The session root, owned by the host; others may only pass through."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.identity is not None:
            os.chmod(self.root, 0o711)

    def _make_disk_layout(self) -> None:
        layout = (self._disk.path, self.view, self.output_dir, self.identity)
        make_disk_layout(*layout, self.policy.environment)
        if layout[1].resolv is not None:
            layout[1].write_resolv()

    def code_env(self) -> dict[str, str]:
        """The environment the session's processes start with."""
        if not isinstance(self.policy.network, bool):  # its gateway's explicit proxy
            return {**self._code_env(), **PROXY_ENV}
        return self._code_env()

    def _code_env(self) -> dict[str, str]:
        if self.enabled:  # as the code sees its folders (see .view)
            commands = f"{SANDBOX_CONTROL}/bin"
            return view_env(os.environ, self.policy, SANDBOX_HOME, SANDBOX_RUNTIME, commands)
        commands = str(self.control_dir / "bin")
        return view_env(
            os.environ, self.policy, str(self.work_dir), str(self.runtime_dir), commands
        )

    def computer(self, *, outputs_at: str | None = None, **kwargs: Any) -> Computer:
        """A Computer wired to this sandbox; keyword arguments override its settings.
        ``outputs_at``: the address a client fetches saved whole outputs at (see
        :attr:`~lmc_runtime.config.Limits.spill_route`); None: by their path."""
        limits = self.policy.limits
        cwd = kwargs.setdefault("cwd", self.work_dir)
        launcher = dataclasses.replace(self.launcher, cwd=Path(cwd))
        kwargs.setdefault("work_dir", self.control_dir)
        kwargs.setdefault("shared_dir", self.shared_dir)
        # Interpreters name their files there by language: not two Computers.
        folders = {Path(kwargs["work_dir"]), Path(kwargs["shared_dir"])}
        if folders & self._taken:
            raise UsageError(
                "another Computer of this sandbox has these folders: give each further "
                "Computer a work_dir and a shared_dir of its own"
            )
        self._taken |= folders
        kwargs.setdefault("launcher", launcher)
        kwargs.setdefault("env", self.code_env())
        spill = Limits(limits.output_bytes, spill_dir=self.output_dir, spill_route=outputs_at)
        kwargs.setdefault("limits", spill)
        kwargs.setdefault("timeouts", Timeouts(execution=limits.wall_seconds))
        reaper: UserReaper | None = None
        census: Census | None = None
        if self._cgroup is None and self.identity is not None:
            reaper, census = UserReaper(self.identity), UserCensus(self.identity.uid)
        elif self._cgroup is None:
            census = TreeCensus(self.root)
        guard = Guard(limits, self._cgroup, self._disk, reaper=reaper, census=census)
        computer = sandbox_computer(guard, **kwargs)
        self._computers.append(computer)
        return computer

    async def disk_room(self) -> int | None:
        """Bytes the host may still write on the session's disk, measured now
        (None: no limit): what the host writes for it counts as its code's writes do."""
        await self._disk.measure()
        return self._disk.room()

    def usage(self) -> Usage:
        """Memory, process, CPU and disk figures, for a session's status."""
        return measure_usage(self._cgroup, self._disk, self.policy, self.enabled, self._limits_by)

    async def aclose(self) -> None:
        """Close its Computers, kill every process left, remove the cgroup and the files."""
        with anyio.CancelScope(shield=True):
            computers, self._computers = self._computers, []
            for computer in computers:
                try:
                    await computer.aclose()
                except Exception:
                    logger.warning("closing a sandboxed Computer failed", exc_info=True)
            handover, self._handover = self._handover, None
            if handover is not None:
                await handover.aclose()
            cgroup, self._cgroup = self._cgroup, None
            if cgroup is not None and not await remove_cgroup(cgroup):
                logger.warning("the cgroup of %s could not be removed", self.root)
            lease, self._lease = self._lease, None
            if lease is not None:  # whatever escaped the cgroup, if any
                await anyio.to_thread.run_sync(lease.release)
            await self._disk.teardown()
            await anyio.to_thread.run_sync(remove_tree, self.root)
