"""The kernel log's tail (core.procs.read_tail): read safely, never through links or FIFOs."""

from __future__ import annotations

import os
from pathlib import Path

from lmc_runtime.backends.core.procs import read_tail


def test_the_tail_is_never_read_through_a_planted_link(tmp_path: Path) -> None:
    """Regression: the kernel log was opened through whatever link stood in its place."""
    secret = tmp_path / "secret"
    secret.write_text("host secret\n")
    log = tmp_path / "kernel.log"
    log.symlink_to(secret)
    assert read_tail(log) == ""


def test_a_fifo_in_the_log_s_place_is_skipped(tmp_path: Path) -> None:
    fifo = tmp_path / "kernel.log"
    os.mkfifo(fifo)
    assert read_tail(fifo) == ""


def test_the_last_lines_are_kept_and_noise_skipped(tmp_path: Path) -> None:
    log = tmp_path / "kernel.log"
    log.write_text("".join(f"line {i}\n" for i in range(2000)) + "running over TCP\n")
    assert read_tail(log, 2, skip="running over TCP") == "line 1998\nline 1999"
