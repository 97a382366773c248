"""The bubblewrap command line of a session, and whether bubblewrap works here."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..backends.base import Availability
from .view import SandboxView

__all__ = [
    "SANDBOX_GID",
    "SANDBOX_UID",
    "availability_probe",
    "bwrap_args",
    "exposed_by",
    "find_bwrap",
    "private_entries",
    "probe_problem",
    "sandbox_available",
    "system_paths",
]

#: The user and group the code sees inside the sandbox (its own user namespace).
SANDBOX_UID = 1000
SANDBOX_GID = 1000

# The lock files useradd, passwd and the like hold for a moment while they
# write /etc (only root may read them; they hold a process id, no secret). One
# seen by a look-up is gone by the time a later sandbox starts.
_LOCKS = frozenset(
    {
        ".pwd.lock",
        *(f"{name}.lock" for name in ("passwd", "group", "shadow", "gshadow", "subuid", "subgid")),
    }
)
#: System directories bound read-only when they exist.
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")


def find_bwrap() -> str | None:
    """The path of the ``bwrap`` binary, or None."""
    return shutil.which("bwrap")


def sandbox_available() -> Availability:
    """Whether bubblewrap is installed and can create the namespaces a session needs."""
    bwrap = find_bwrap()
    if bwrap is None:
        return Availability.no(
            "bubblewrap (bwrap) is not installed; install the Debian package 'bubblewrap'"
        )
    probe = availability_probe(bwrap, ["true"])
    problem = probe_problem(probe, timeout=30)
    if problem is not None:
        return Availability.no(
            f"bwrap cannot create user, PID and network namespaces here ({problem})"
        )
    return Availability.yes()


def availability_probe(bwrap: str, command: Sequence[str]) -> list[str]:
    """The probe's command line: ``command`` in the namespaces a session gets,
    with the system folders a session sees bound read-only. Never the whole
    host (``--ro-bind / /``): that copies every mount of the host, and bwrap
    fails when one of them goes away meanwhile (another session's disk, at its
    end), so sessions made while others end were refused at random."""
    args = [bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    for path in system_paths():
        if path.is_symlink():  # /bin -> usr/bin on a merged-/usr system
            args += ["--symlink", os.readlink(path), str(path)]
        else:
            args += ["--ro-bind", str(path), str(path)]
    return [*args, "--proc", "/proc", "--dev", "/dev", "--", *command]


def probe_problem(argv: Sequence[str], *, timeout: float) -> str | None:
    """Run a probe command: None if it succeeded, else why not (its stderr)."""
    try:
        done = subprocess.run(list(argv), capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"it could not be run: {exc}"
    if done.returncode != 0:
        return done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
    return None


def system_paths() -> list[Path]:
    """Read-only paths a session needs: system directories, the Python prefixes,
    this package and, in a checkout, the kernels folder next to it."""
    paths = [Path(p) for p in _SYSTEM]
    paths += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent]
    package = Path(__file__).resolve().parents[1]
    # The package and a checkout's kernels folder, not the whole checkout around them
    # (its .git, tests, caches and anything else kept there stay out of reach).
    paths += [package, package.parent / "kernels"]
    kept: list[Path] = []
    for path in paths:
        if path.exists() and not any(path == k or k in path.parents for k in kept):
            kept = [k for k in kept if path not in k.parents] + [path]
    return kept


def exposed_by(path: Path, readonly: Iterable[Path]) -> Path | None:
    """The read-only bound folder that would show ``path`` inside a sandbox, or None.

    Sessions' directories must not be inside one: another session could then
    read their files and connect to their kernels' unix sockets (a read-only
    mount does not stop ``connect``).
    """
    resolved = path.resolve()
    for bound in readonly:
        if resolved == bound or bound in resolved.parents:
            return bound
    return None


def private_entries(roots: Iterable[Path]) -> list[Path]:
    """Files and folders under ``roots`` that others may not read (``/etc/shadow``).

    Inside the sandbox the code's files belong to the invoking user; these are
    hidden so that, when that user is root, the code cannot read them.
    """
    found: list[Path] = []
    for root in roots:
        for top, dirs, files in os.walk(root):
            for name in [*dirs, *files]:
                path = Path(top, name)
                try:
                    info = path.lstat()
                except OSError:
                    continue
                if stat.S_ISLNK(info.st_mode) or name in _LOCKS:
                    continue
                if not info.st_mode & stat.S_IROTH:
                    found.append(path)
            dirs[:] = [d for d in dirs if Path(top, d) not in found]
    return found


def bwrap_args(
    bwrap: str,
    *,
    readonly: Sequence[Path],
    hidden: Sequence[Path],
    writable: Sequence[Path],
    control: Sequence[Path],
    network: bool,
    tmp_bytes: int | None = None,
    view: SandboxView | None = None,
) -> list[str]:
    """The bwrap options (up to and excluding ``--``) for one session.

    ``writable`` folders take the code's writes; ``control`` folders hold the
    host's own files for the session (connection files, cells, pages, FIFOs,
    logs): the host alone writes there, the sandbox sees them read-only. No
    path inside a folder the sandbox can write is ever bound. ``tmp_bytes``
    caps each memory-backed folder the code can write (``/tmp``, ``/var/tmp``,
    ``/dev/shm``), which no disk limit counts. ``view``: the home, runtime
    folder and accounts the code sees (see :mod:`.view`).
    """
    # --disable-userns: no nested user namespaces (and so no way back to
    # capabilities) inside; it needs a user namespace of bwrap's own.
    args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns"]
    if network:  # the namespace the network helper made for it (see network.py)
        args.append("--share-net")
    args += [
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--hostname",
        "lmc-sandbox",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_GID),
    ]
    # The private tmpfs folders first: a checkout or a virtualenv that lives
    # under /tmp is bound on top of them below, not hidden by them.
    size = ["--size", str(tmp_bytes)] if tmp_bytes is not None else []
    args += ["--proc", "/proc", "--dev", "/dev"]
    # /dev is a tmpfs as large as the host's memory allows: its shm folder
    # gets a capped tmpfs of its own, like /tmp and /var/tmp; /run stays tiny.
    args += [*size, "--tmpfs", "/dev/shm", *size, "--tmpfs", "/tmp"]
    args += ["--size", str(1 << 20), "--tmpfs", "/run", *size, "--tmpfs", "/var/tmp"]
    for path in readonly:
        if path.is_symlink():  # /bin -> usr/bin on a merged-/usr system
            args += ["--symlink", os.readlink(path), str(path)]
        else:
            args += ["--ro-bind", str(path), str(path)]
    for path in hidden:
        # Looked up a while ago (see hostview.py): an entry gone since then is
        # left out, or bwrap would try to make its mount point in the
        # read-only /etc and the sandbox would not start.
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(info.st_mode):
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            args += ["--ro-bind", "/dev/null", str(path)]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    for path in control:
        args += ["--ro-bind", str(path), str(path)]
    if view is not None:
        args += view.bwrap_options()
    # The root itself (a tmpfs holding the mount points) is read-only too: only the
    # working directory, the runtime directory and the tmpfs folders take writes.
    # bwrap starts in /, not in the host's cwd, and says so in PWD (the wrapper
    # inside enters the session's folder, see ``_exec.py --chdir``).
    args += ["--remount-ro", "/", "--chdir", "/"]
    return args
