"""read_log_tail: the kernel log is read safely, never through links or FIFOs."""

from __future__ import annotations

import os
from pathlib import Path

from lmc_runtime.backends.jupyter.process import read_log_tail


def test_read_log_tail_never_follows_a_planted_link(tmp_path: Path) -> None:
    """Regression: the kernel log was opened through whatever link stood in its place."""
    secret = tmp_path / "secret"
    secret.write_text("host secret\n")
    log = tmp_path / "kernel.log"
    log.symlink_to(secret)
    assert read_log_tail(log) == ""


def test_read_log_tail_skips_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "kernel.log"
    os.mkfifo(fifo)
    assert read_log_tail(fifo) == ""


def test_read_log_tail_keeps_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "kernel.log"
    log.write_text("".join(f"line {i}\n" for i in range(2000)))
    assert read_log_tail(log, 2) == "line 1998\nline 1999"
