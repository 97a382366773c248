"""No interpreter outlives the process that owns its Computer, however that process ends.

Each test runs ``owner.py`` as a process of its own, learns the interpreter's pid
from the code, ends the owner one way, and waits (bounded, on the pid's end)
for the interpreter to be gone, with every process of its session.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lmc_runtime import Computer
from lmc_runtime.procs import session_members

from ...waiters import descends, process_ended

OWNER = Path(__file__).with_name("owner.py")
#: Bounds every wait: a kernel's start under load, the owner's end.
_GUARD = 60.0
#: Python and R are Jupyter kernels; the shell is on a PTY; node and Java are runners.
LANGUAGES = ["python", "r", "shell", "javascript", "java"]
#: The signals an owner is ended by: ``timeout``'s, the kernel's, a closed terminal's.
SIGNALS = (signal.SIGTERM, signal.SIGKILL, signal.SIGHUP)


@pytest.fixture(scope="module", autouse=True)
def _available() -> None:
    languages = Computer().languages
    missing = [name for name in LANGUAGES if not languages[name].available]
    if missing:
        pytest.skip(f"not available here: {missing}")


@pytest.fixture
def owner(request: pytest.FixtureRequest) -> Iterator[list[subprocess.Popen[str]]]:
    """Started owners, killed (with what they left) when the test ends."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=_GUARD)


def _start(
    started: list[subprocess.Popen[str]], language: str, mode: str, tmp: Path | None = None
) -> tuple[subprocess.Popen[str], int]:
    """The owner, started in ``mode`` (with ``tmp`` as its TMPDIR), and its interpreter's pid."""
    env = {**os.environ, "TMPDIR": str(tmp)} if tmp is not None else None
    process = subprocess.Popen(
        [sys.executable, str(OWNER), language, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    started.append(process)
    assert process.stdout is not None
    line = process.stdout.readline()  # the owner prints it as soon as the code did
    assert line.startswith("PID "), f"the owner said {line!r}"
    return process, int(line.split()[1])


def _assert_gone(pid: int, how: str = "") -> None:
    assert process_ended(pid, _GUARD), f"the interpreter {pid} outlived its owner {how}"
    # The session's other processes were killed with it; each ends on its own (bounded).
    for member in session_members(pid):
        assert process_ended(member, _GUARD), f"{member} of the interpreter's session remains {how}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_owner_that_returns_without_closing_leaves_no_interpreter(
    owner: list[subprocess.Popen[str]], language: str, tmp_path: Path
) -> None:
    """Regression: a script that ran code and ended without close() left its kernel
    running, re-parented to init, for good (and R its Rtmp folder)."""
    process, pid = _start(owner, language, "end", tmp_path)
    process.communicate(timeout=_GUARD)
    _assert_gone(pid)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("language", ["python", "shell"])
def test_regression_a_script_whose_global_computer_is_never_closed_ends(
    owner: list[subprocess.Popen[str]], language: str, tmp_path: Path
) -> None:
    """Regression: a script keeping its Computer in a global to the end never ended:
    as the interpreter exited, the collector closed the portal, whose close waited
    for the portal's thread, already stopped. It ends, leaving no interpreter."""
    process, pid = _start(owner, language, "global", tmp_path)
    process.communicate(timeout=_GUARD)
    assert process.returncode == 0
    _assert_gone(pid)


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_owner_killed_by_a_signal_leaves_no_interpreter(
    owner: list[subprocess.Popen[str]], language: str
) -> None:
    """Regression: an owner ended by SIGTERM, SIGKILL or SIGHUP (``timeout`` around
    ``lmc run``) left its kernels running; the code running there ignores SIGHUP.

    One owner per signal, started at once (each is a process of its own, with an
    interpreter of its own): most of each one's time is its interpreter starting."""
    with ThreadPoolExecutor(max_workers=len(SIGNALS)) as pool:
        started = list(pool.map(lambda _: _start(owner, language, "busy"), SIGNALS))
    for signum, (process, _) in zip(SIGNALS, started, strict=True):
        process.send_signal(signum)
    for signum, (process, pid) in zip(SIGNALS, started, strict=True):
        process.wait(timeout=_GUARD)
        _assert_gone(pid, f"after {signum.name}")


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_computer_dropped_unclosed_ends_its_interpreter_once_collected(
    owner: list[subprocess.Popen[str]], language: str
) -> None:
    """Regression: a Computer dropped without close() (``LmcTool(computer=Computer())``)
    kept its kernel, and the thread of its event loop, until the process ended."""
    process, pid = _start(owner, language, "drop")
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "DROPPED"
    _assert_gone(pid)
    assert process.poll() is None, "the owner still runs: the collection ended it"
    process.communicate("", timeout=_GUARD)


def _chromium_under(ancestor: int) -> list[int]:
    """Chromium processes descending from ``ancestor``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            argv0 = Path(entry.path, "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if b"chromium" in argv0 and descends(pid, ancestor):
            found.append(pid)
    return found


def test_regression_a_render_under_way_ends_with_its_killed_owner(
    owner: list[subprocess.Popen[str]],
) -> None:
    """Regression: Chromium (an HTML screenshot, the SVG fallback) and the cairosvg
    worker were not held by the Computer's lifeline: an owner killed mid-render left
    them running. Now they end with it."""
    if not Computer().languages["html"].available:
        pytest.skip("chromium is not installed here")
    process = subprocess.Popen(
        [sys.executable, str(OWNER), "html", "render"], stdout=subprocess.PIPE, text=True
    )
    owner.append(process)
    assert process.stdout is not None and process.stdout.readline().strip() == "RENDERING"
    deadline = time.monotonic() + _GUARD
    while not (browsers := _chromium_under(process.pid)):
        assert time.monotonic() < deadline, "Chromium never started"
        time.sleep(0.05)
    process.kill()
    process.wait(timeout=_GUARD)
    for pid in browsers:
        assert process_ended(pid, _GUARD), f"Chromium {pid} outlived its owner"
