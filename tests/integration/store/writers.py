"""Writer processes for the stores' crash tests: a script started with ``python -c``,
what it says line by line, and a SIGKILL at any moment."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from lmc_runtime.messages import Message

__all__ = ["assert_acknowledged_prefix", "kill", "killed_while_writing", "read_line", "start"]

REPO = Path(__file__).resolve().parents[3]


def start(script: str, *args: str, stdin: int = subprocess.DEVNULL) -> subprocess.Popen[str]:
    """``script`` running with ``args`` in a Python that imports this checkout."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
    )


def read_line(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """The next line ``proc`` says (stripped), waiting at most ``timeout`` seconds."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        assert selector.select(timeout), "the process said nothing in time"
    return proc.stdout.readline().strip()


def kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL ``proc`` and see it end."""
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL


def killed_while_writing(script: str, *args: str, acknowledgements: int) -> int:
    """Start a writer that prints the number of each append that returned, read
    ``acknowledgements`` of them, then SIGKILL it: the last number it printed."""
    proc = start(script, *args)
    acknowledged = -1
    try:
        for _ in range(acknowledgements):
            acknowledged = int(read_line(proc))
    finally:
        kill(proc)
    return acknowledged


def assert_acknowledged_prefix(loaded: Sequence[Message], acknowledged: int, size: int) -> None:
    """``loaded`` holds every append up to ``acknowledged``, whole and in order: the
    ``n``-th one's id ``b{n}`` and its content ``{n}:`` and ``size`` z's."""
    assert len(loaded) >= acknowledged + 1  # every append that returned is there
    assert [m.id for m in loaded] == [f"b{n}" for n in range(len(loaded))]
    assert all(m.content == f"{n}:" + "z" * size for n, m in enumerate(loaded))
