"""The host user each sandboxed session runs as.

A server running as root never lets a sandbox run as host root: every session
gets an unprivileged host uid (and a gid of the same number) of its own, leased
from a range that ``lmc setup`` reserves in ``/etc/subuid`` and ``/etc/subgid``
under the name ``lmc-sandbox``. A lease is a lock file held with ``flock``, so
two servers on one host never hand out the same uid, and a crashed server's
uids come free when its process is gone. Whatever a previous holder of a uid
left running is killed when the uid is leased and again when it is released.

A server that runs unprivileged has no uids to hand out: its sessions run as
its own user (see the threat model in docs/service/security.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ..errors import SandboxUnavailable

__all__ = [
    "RANGE_LINE",
    "RANGE_NAME",
    "SUBID_FILES",
    "Identity",
    "Lease",
    "UidRange",
    "UserReaper",
    "kill_user",
    "reserve_range",
    "unreserved",
]

logger = logging.getLogger(__name__)

#: The name the range is reserved under in /etc/subuid and /etc/subgid.
RANGE_NAME = "lmc-sandbox"
#: The range ``lmc setup`` reserves when none is: far above ordinary users.
DEFAULT_FIRST = 1_500_000
DEFAULT_COUNT = 65_536
SUBID_FILES = (Path("/etc/subuid"), Path("/etc/subgid"))
#: The line ``lmc setup`` adds to each of them.
RANGE_LINE = f"{RANGE_NAME}:{DEFAULT_FIRST}:{DEFAULT_COUNT}"


@dataclass(frozen=True)
class Identity:
    """A host uid and gid."""

    uid: int
    gid: int


def _read_range(path: Path) -> tuple[int, int] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        first, _, count = rest.partition(":")
        if name == RANGE_NAME and first.isdigit() and count.isdigit():
            return int(first), int(count)
    return None


def unreserved(files: tuple[Path, ...] = SUBID_FILES) -> list[Path]:
    """Those of ``files`` that do not hold the sandbox range yet."""
    return [path for path in files if _read_range(path) is None]


def reserve_range(files: tuple[Path, ...] = SUBID_FILES) -> tuple[int, int]:
    """Reserve the sandbox range in ``/etc/subuid``/``/etc/subgid`` (idempotent)."""
    for path in unreserved(files):
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(RANGE_LINE + "\n")
    found = _read_range(files[0])
    assert found is not None
    return found


#: What a uid's lock file holds once its last lease killed everything of that uid
#: and released it: the next lease starts with nothing of that uid running (a
#: server that ended without releasing leaves the file empty, and the next lease
#: kills). A lease empties the file while it holds it.
_CLEAN = b"released clean\n"


def kill_user(identity: Identity) -> bool:
    """SIGKILL every process of ``identity.uid`` (as that uid: ``kill(-1)``);
    whether that ran.

    ``kill(-1)`` reaches every process the caller may signal: with the uid of
    the session, exactly the session's processes, wherever they hide.
    """
    if identity.uid == os.geteuid():
        raise ValueError("refusing to kill every process of the server's own user")
    kill = shutil.which("kill")
    script = f"import os; os.kill(-1, {int(signal.SIGKILL)})"
    argv = [kill, "-KILL", "--", "-1"] if kill else [sys.executable, "-I", "-S", "-c", script]
    setpriv = shutil.which("setpriv")
    # Through setpriv where there is one: a Popen that changes the user itself
    # cannot vfork, and a fork copies the whole server (its page tables).
    user: dict[str, Any] = {"user": identity.uid, "group": identity.gid, "extra_groups": []}
    if setpriv is not None:
        ids = [f"--reuid={identity.uid}", f"--regid={identity.gid}", "--clear-groups"]
        argv, user = [setpriv, *ids, "--", *argv], {}
    try:
        done = subprocess.run(argv, check=False, capture_output=True, timeout=30, **user)
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("killing the processes of uid %d failed: %s", identity.uid, exc)
        return False
    return done.returncode == 0


class UserReaper:
    """Ends what a session left behind by killing every process of its host user
    (where no cgroup holds the session's processes)."""

    def __init__(self, identity: Identity) -> None:
        self.identity = identity

    async def kill_leftovers(self) -> None:
        await anyio.to_thread.run_sync(kill_user, self.identity)


class Lease:
    """One leased identity; :meth:`release` kills what it left and frees it."""

    def __init__(self, identity: Identity, lock_fd: int) -> None:
        self.identity = identity
        self._lock_fd: int | None = lock_fd

    def release(self) -> None:
        if self._lock_fd is None:
            return
        if kill_user(self.identity):  # the next lease need not kill again
            with contextlib.suppress(OSError):
                os.pwrite(self._lock_fd, _CLEAN, 0)
        os.close(self._lock_fd)
        self._lock_fd = None


class UidRange:
    """The uids sandboxes may run as, leased one per session."""

    def __init__(
        self, first: int, count: int, lock_dir: Path = Path("/run/lmc-runtime/uids")
    ) -> None:
        if first < 1000 or count < 1:
            raise ValueError(f"a sandbox uid range must lie above 1000, got {first}+{count}")
        self.first = first
        self.count = count
        self.lock_dir = lock_dir

    @classmethod
    def reserved(cls, files: tuple[Path, ...] = SUBID_FILES) -> UidRange:
        """The range ``lmc setup`` reserved; SandboxUnavailable if there is none."""
        found = _read_range(files[0])
        if found is None or _read_range(files[1]) != found:
            raise SandboxUnavailable(
                f"no host uid range is reserved for sandboxes (no '{RANGE_NAME}' entry in "
                "/etc/subuid and /etc/subgid): run `lmc setup` as root"
            )
        return cls(*found)

    def lease(self) -> Lease:
        """The first free identity of the range, killing whatever it left running."""
        self.lock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.lock_dir, 0o700)
        directory = os.open(self.lock_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for uid in range(self.first, self.first + self.count):
                fd = os.open(
                    str(uid),
                    os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o600,
                    dir_fd=directory,
                )
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                identity = Identity(uid, uid)
                if os.pread(fd, len(_CLEAN) + 1, 0) != _CLEAN:
                    kill_user(identity)  # left by a server that ended without releasing it
                os.ftruncate(fd, 0)  # in use
                return Lease(identity, fd)
        finally:
            with contextlib.suppress(OSError):
                os.close(directory)
        raise SandboxUnavailable(f"all {self.count} sandbox uids are in use")


def per_session_processes() -> str | None:
    """How sessions get a process limit of their own here, or None when they
    cannot (an unprivileged server with no cgroup it may write: RLIMIT_NPROC
    then counts every session of the server's user together)."""
    if os.geteuid() == 0:
        return "a host uid for each session"
    from .cgroups import create_cgroup
    from .policy import SessionLimits

    cgroup, how = create_cgroup(f"lmc-probe-{os.getpid()}", SessionLimits())
    if cgroup is None:
        return None
    try:
        return how if "pids" in cgroup.controllers else None
    finally:
        cgroup.remove()
