"""Regression: the bubblewrap availability probe, run at every session start,
does not copy the host's mounts.

Under load a session was refused ("the sandbox cannot run here: ... Unable to
apply mount flags: remount .../sessions/<id>/disk: No such file or
directory"): the probe bound the whole host (``--ro-bind / /``), bwrap then
remounted every mount of it, and another session's disk went away meanwhile.
The probe now binds only the system folders a session sees, so a mount
elsewhere (made here under a fresh folder) is not in its namespace at all.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
from pathlib import Path

from lmc_runtime.sandbox.bwrap import availability_probe, find_bwrap, sandbox_available

#: umount2 flag (linux/fs.h): detach lazily.
_MNT_DETACH = 2


def test_the_availability_probe_leaves_out_mounts_outside_the_system_folders() -> None:
    bwrap = find_bwrap()
    assert bwrap is not None
    libc = ctypes.CDLL(None, use_errno=True)
    with tempfile.TemporaryDirectory(prefix="lmc-probe-") as folder:
        point = Path(folder) / "disk"
        point.mkdir()
        mounted = libc.mount(b"tmpfs", os.fsencode(point), b"tmpfs", 0, None)
        assert mounted == 0, os.strerror(ctypes.get_errno())
        try:
            assert str(point) in Path("/proc/self/mountinfo").read_text()
            probe = availability_probe(bwrap, ["cat", "/proc/self/mountinfo"])
            inside = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=True)
            assert "/usr" in inside.stdout  # it did list the sandbox's mounts
            assert str(point) not in inside.stdout
            assert sandbox_available().available
        finally:
            libc.umount2(os.fsencode(point), _MNT_DETACH)
