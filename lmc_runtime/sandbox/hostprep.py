"""What ``lmc setup`` prepares on the host for sandboxes (as root), or with
``--dry-run`` says it would prepare, changing nothing."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .bwrap import system_paths
from .identity import RANGE_LINE, SUBID_FILES, reserve_range, unreserved

__all__ = ["HOST_CHANGES", "HostPaths", "prepare_host", "unreachable_paths"]

#: What preparing the host changes, for ``lmc setup --help``.
HOST_CHANGES = (
    f"adds the line {RANGE_LINE} to /etc/subuid and /etc/subgid (the host uids "
    "sandboxes run as), unless the range is there",
    "makes /dev/net/tun mode 0666 (Debian's default), for sessions' networks",
    "gives others search permission (o+x, not read) on each folder above the system "
    "paths sandboxes bind (the Python install among them) that lacks it",
)


def unreachable_paths(paths: Iterable[Path]) -> list[Path]:
    """Folders on the way to ``paths`` that other users may not pass through.

    A sandbox runs as an unprivileged host user and bubblewrap binds the
    system paths (the Python install among them) as that user, so each folder
    above them needs the 'search' permission for others (not 'read').
    """
    blocked: list[Path] = []
    for path in paths:
        for folder in [*reversed(path.parents), path]:
            try:
                mode = folder.stat().st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH and folder not in blocked:
                blocked.append(folder)
    return blocked


@dataclass(frozen=True)
class HostPaths:
    """The host's files that preparing it touches."""

    subid_files: tuple[Path, ...] = SUBID_FILES
    tun: Path = Path("/dev/net/tun")
    #: The paths sandboxes bind (None: :func:`~.bwrap.system_paths`).
    bound: tuple[Path, ...] | None = field(default=None)

    def bound_paths(self) -> list[Path]:
        return list(self.bound) if self.bound is not None else list(system_paths())


def prepare_host(
    say: Callable[[str], None], *, dry_run: bool = False, paths: HostPaths | None = None
) -> None:
    """Reserve the sandbox uid range and open the way to the bound system paths;
    with ``dry_run``, say each change instead of making it."""
    host = paths or HostPaths()
    if os.geteuid() != 0:
        say(
            "lmc setup: not root, so sandboxes will run as this user (see docs/service/security.md)"
        )
        return
    said: list[str] = []
    _prepare(host, dry_run, said.append)
    if dry_run and not said:
        said.append("lmc setup: the host is ready for sandboxes; nothing would change")
    for line in said:
        say(line)


def _prepare(host: HostPaths, dry_run: bool, say: Callable[[str], None]) -> None:
    """Each change, made and said, or (``dry_run``) only said."""
    if dry_run:
        for path in unreserved(host.subid_files):
            say(f"lmc setup: would add {RANGE_LINE} to {path} (host uids for sandboxes)")
    else:
        first, count = reserve_range(host.subid_files)
        say(f"lmc setup: host uids {first}-{first + count - 1} are reserved for sandboxes")
    tun = host.tun
    if tun.exists() and stat.S_IMODE(tun.stat().st_mode) != 0o666:
        # Debian's default: a session's network helper, running as the
        # session's own uid, opens it inside its user namespace.
        if dry_run:
            say(f"lmc setup: would make {tun} mode 0666 (Debian's default), for sessions' networks")
        else:
            os.chmod(tun, 0o666)
            say(f"lmc setup: {tun} is now mode 0666 (Debian's default), for sessions' networks")
    for folder in unreachable_paths(host.bound_paths()):
        if dry_run:
            say(f"lmc setup: would let sandbox users pass through {folder} (o+x)")
            continue
        mode = stat.S_IMODE(folder.stat().st_mode)
        os.chmod(folder, mode | stat.S_IXOTH)
        say(f"lmc setup: {folder} may now be passed through (not listed) by sandbox users")
