"""AppleScript: the macOS path with a stand-in `osascript` on PATH (it runs the script
file with /bin/sh), and the clear reply everywhere else.

The stand-in is a real process: output streams from it as it is produced, and
timeouts and interrupts stop it and its children.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends import BackendEntry, Registry
from lmc_runtime.backends.applescript import AppleScriptBackend

from ..conftest import run, run_interrupting

FAKE_OSASCRIPT = (
    '#!/bin/sh\n# a stand-in for macOS\'s osascript: run the script with sh\nexec /bin/sh "$1"\n'
)


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, dead but not yet reaped, is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


@pytest.fixture(scope="module")
def fake_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fake-bin")
    script = folder / "osascript"
    script.write_text(FAKE_OSASCRIPT)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.fixture
def mac(fake_bin: Path) -> Iterator[Computer]:
    """A Computer whose AppleScript backend believes it runs on macOS."""
    path = f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    registry = Registry()
    registry.add(
        BackendEntry("applescript", "unused:unused", ("osascript",)),
        AppleScriptBackend(platform="darwin", path=path),
    )
    with Computer(registry=registry, timeouts=Timeouts(interrupt_grace=1.0)) as c:
        yield c


@pytest.mark.skipif(sys.platform == "darwin", reason="the real osascript is here")
def test_elsewhere_an_applescript_message_gets_a_clear_reply_not_a_crash() -> None:
    with Computer() as computer:
        status = computer.languages["applescript"]
        result = run(computer, 'display dialog "hi"', "applescript")
        again = run(computer, "beep", "osascript")
    assert not status.available and "AppleScript needs macOS" in (status.reason or "")
    for answer in (result, again):
        (reply,) = answer.messages
        assert "AppleScript needs macOS" in reply.content
        assert reply.extras["status"] == "unavailable"  # type: ignore[index]


def test_output_and_the_final_null_with_status_and_exit_code(mac: Computer) -> None:
    result = run(mac, "echo hello", "applescript")
    assert result.output == "hello\n"
    assert result.final.format == "active_line" and result.final.content is None
    assert result.final.extras == {"status": "ok", "exit_code": 0, "state_lost": False}
    assert all(m.in_reply_to == result.final.in_reply_to for m in result.messages)


def test_the_script_reaches_osascript_unchanged(mac: Computer) -> None:
    code = 'cat "$0" # tell application "Finder" to get name of startup disk -- «é»'
    assert run(mac, code, "applescript").output == code + "\n"


def test_output_streams_while_the_process_runs(mac: Computer, tmp_path: Path) -> None:
    go = tmp_path / "go"
    code = f"echo one\nwhile [ ! -e '{go}' ]; do sleep 0.05; done\necho two"
    seen: list[str] = []
    for message in mac.run("applescript", code, timeout=30):
        if message.format == "output":
            seen.append(message.content)
            go.touch()  # the second line only comes once the first was received
        last = message
    assert seen == ["one\n", "two\n"]
    assert last.extras["status"] == "ok"  # type: ignore[index]


def test_stderr_is_marked_and_a_nonzero_exit_is_an_error(mac: Computer) -> None:
    result = run(
        mac,
        "echo 'script.applescript:1:5: execution error: nope (-1728)' >&2\nexit 3",
        "applescript",
    )
    (output,) = result.of("console", "output")
    assert output.extras == {"stream": "stderr"}
    assert "execution error" in output.content
    assert result.status == "error" and result.final.extras["exit_code"] == 3  # type: ignore[index]


def test_env_applies_to_its_run_only(mac: Computer) -> None:
    code = 'echo "[$LMC_NEW] [$HOME]"'
    home = os.environ.get("HOME", "")
    env = {"LMC_NEW": "set é", "HOME": "/elsewhere"}
    assert run(mac, code, "applescript", env=env).output == "[set é] [/elsewhere]\n"
    assert run(mac, code, "applescript").output == f"[] [{home}]\n"


def test_a_timeout_stops_the_process_and_the_next_run_works(mac: Computer) -> None:
    result = run(mac, "echo start\nsleep 100", "applescript", timeout=1.0)
    assert result.output.startswith("start\n")
    assert "timed out after 1 s" in result.output
    assert result.status == "timeout" and result.final.extras["state_lost"] is False  # type: ignore[index]
    assert run(mac, "echo again", "applescript").output == "again\n"


def test_a_process_that_ignores_sigint_is_killed_after_the_grace(mac: Computer) -> None:
    result = run(mac, "trap '' INT\nwhile :; do sleep 0.1; done", "applescript", timeout=1.0)
    assert result.status == "timeout"
    assert "did not stop within 1 s" in result.output and "killed" in result.output


def test_interrupt_stops_the_process_and_its_children(mac: Computer, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = f"sleep 100 &\necho $! > '{pid_file}'\necho started\nwait"
    result = run_interrupting(
        mac, code, "applescript", lambda m: "started" in str(m.content), timeout=60
    )
    assert result.status == "interrupted"
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(child)


def test_a_caller_that_stops_reading_stops_the_code(mac: Computer, tmp_path: Path) -> None:
    marker = tmp_path / "late"
    stream = mac.run("applescript", f"echo first\nsleep 3\ntouch '{marker}'", timeout=30)
    assert next(stream).content == "first\n"
    stream.close()  # type: ignore[attr-defined]
    assert run(mac, "sleep 4; echo next", "applescript", timeout=30).output == "next\n"
    assert not marker.exists()
