"""Nothing a Computer's interpreters leave in the temporary directory stays there:
R's ``Rtmp`` folders go with the Computer, and the folders of an owner that was
killed go with the next start, never those of an owner still alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer

from ..conftest import run

OWNER = Path(__file__).with_name("owner.py")
_GUARD = 60.0


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary directory of this test's own, for this process and its children."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.fixture
def owner(tmp: Path) -> Iterator[subprocess.Popen[str]]:
    """A Computer's owner in a process of its own (``owner.py python busy``), whose
    temporary directory is ``tmp``; killed when the test ends."""
    process = subprocess.Popen(
        [sys.executable, str(OWNER), "python", "busy"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert process.stdout is not None
    assert process.stdout.readline().startswith("PID "), "the owner did not start python"
    yield process
    if process.poll() is None:
        process.kill()
    process.communicate(timeout=_GUARD)


def _folders(where: Path) -> list[str]:
    return sorted(entry.name for entry in where.iterdir())


def test_r_restarted_then_closed_leaves_no_rtmp_folder(tmp: Path) -> None:
    """Regression: every R kernel left its Rtmp folder when it ended (killed, it
    cannot remove it): a Computer that restarted R once left two."""
    if not Computer().languages["r"].available:
        pytest.skip("R is not available here")
    with Computer() as computer:
        assert run(computer, "cat(nzchar(tempdir()))", "r").output.strip() == "TRUE"
        computer.restart("r")
        assert run(computer, "cat(file.exists(tempdir()))", "r").output.strip() == "TRUE"
    assert _folders(tmp) == []


def test_the_next_start_removes_the_folders_of_an_owner_that_was_killed(
    tmp: Path, owner: subprocess.Popen[str]
) -> None:
    """Regression: a Computer's lmc-* folders stayed behind for good when its owner
    was killed."""
    left = _folders(tmp)
    assert any(name.startswith("lmc-") for name in left), left
    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=_GUARD)
    assert _folders(tmp) == left, "the killed owner's folders are there until a start"
    with Computer():
        pass
    assert _folders(tmp) == []


def test_a_start_keeps_the_folders_of_an_owner_alive(
    tmp: Path, owner: subprocess.Popen[str]
) -> None:
    """A start removes only folders whose owner has provably ended."""
    theirs = _folders(tmp)
    with Computer():
        assert set(theirs) <= set(_folders(tmp))
    assert _folders(tmp) == theirs
    assert owner.poll() is None
