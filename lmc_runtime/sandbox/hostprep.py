"""What ``lmc setup`` prepares on the host for sandboxes (as root)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from .bwrap import system_paths
from .identity import reserve_range

__all__ = ["prepare_host", "unreachable_paths"]


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


def prepare_host(say: Callable[[str], None]) -> None:
    """Reserve the sandbox uid range and open the way to the bound system paths."""
    if os.geteuid() != 0:
        say("lmc setup: not root, so sandboxes will run as this user (see the README)")
        return
    first, count = reserve_range()
    say(f"lmc setup: host uids {first}-{first + count - 1} are reserved for sandboxes")
    tun = Path("/dev/net/tun")
    if tun.exists() and stat.S_IMODE(tun.stat().st_mode) != 0o666:
        # Debian's default: a session's network helper, running as the
        # session's own uid, opens it inside its user namespace.
        os.chmod(tun, 0o666)
        say("lmc setup: /dev/net/tun is now mode 0666 (Debian's default), for sessions' networks")
    for folder in unreachable_paths(system_paths()):
        mode = stat.S_IMODE(folder.stat().st_mode)
        os.chmod(folder, mode | stat.S_IXOTH)
        say(f"lmc setup: {folder} may now be passed through (not listed) by sandbox users")
