"""Kernel files read cheaply (lmc_runtime.sandbox.kernel_files): held counters
read as they are now, from several threads, and none held once closed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from lmc_runtime.sandbox.kernel_files import HeldFiles, read_raw


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_read_raw_reads_a_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 200_000 + b"\n")
    assert read_raw(path) == b"x" * 200_000 + b"\n"


def test_a_closed_set_holds_no_file_when_read_again(tmp_path: Path) -> None:
    """Regression: a read after close (the cgroup's counters read once more while
    it is removed) opened a descriptor that nothing closed."""
    counter = tmp_path / "pids.events"
    counter.write_text("max 1\n")
    held = HeldFiles()
    before = _open_fds()
    assert held.read(counter) == "max 1"
    held.close()
    counter.write_text("max 2\n")
    assert held.read(counter) == "max 2"
    assert _open_fds() == before


def test_reads_from_several_threads_hold_one_descriptor_a_file(tmp_path: Path) -> None:
    """Regression: two first reads at once each opened the file, and one of the
    descriptors was never closed."""
    counters = [tmp_path / f"c{n}" for n in range(50)]
    for path in counters:
        path.write_text("1\n")
    before = _open_fds()
    for _ in range(20):
        held = HeldFiles()
        start = threading.Barrier(4)

        def read_all(held: HeldFiles = held, start: threading.Barrier = start) -> None:
            start.wait(timeout=30)
            for path in counters:
                assert held.read(path) == "1"

        threads = [threading.Thread(target=read_all) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        held.close()
    assert _open_fds() == before
