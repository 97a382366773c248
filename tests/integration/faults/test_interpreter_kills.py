"""An interpreter's whole process group killed with SIGKILL from outside, in the
middle of a run; Chromium killed while it renders.

``tests/contract/test_death.py`` covers, for every language, an interpreter
that kills itself mid-run (its own pid) and one killed from outside between
runs. What is added here: the kill comes from outside, mid-run, and takes the
interpreter's process group with it (the kernel and what it started), as the
OOM killer or an operator's ``kill -9 -PGID`` would.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from lmc_runtime import Computer, Timeouts

from ...contract.harness import (
    GRACE,
    GUARD,
    Result,
    assert_ends_once,
    code_message,
    run,
    wait_for,
)
from ...contract.languages import PROFILES, Profile

#: The interpreters of the brief: a Jupyter kernel, a shell on a PTY, node, the JVM.
LANGUAGES = ["python", "shell", "javascript", "java"]


@pytest.fixture
def computer(tmp_path: Path) -> Iterator[Computer]:
    with Computer(cwd=tmp_path, timeouts=Timeouts(execution=GUARD, interrupt_grace=GRACE)) as c:
        yield c


def _available(computer: Computer, name: str) -> Profile:
    status = computer.languages[name]
    if not status.available:
        pytest.skip(f"{name} is not available here: {status.reason}")
    return PROFILES[name]


def _killed_mid_run(computer: Computer, lang: Profile, pgid: int) -> Result:
    """Run ``tick_forever``; at its first tick, SIGKILL process group ``pgid``."""
    message = code_message(lang, lang.tick_forever)
    result = Result(message["id"])
    killed = False
    for reply in computer.run(message, timeout=GUARD):
        result.messages.append(reply)
        if not killed and "tick" in str(reply.content or ""):
            os.killpg(pgid, signal.SIGKILL)
            killed = True
    assert killed, f"the code never ticked:\n{result.describe()}"
    return result


@pytest.mark.parametrize("name", LANGUAGES)
def test_an_interpreters_process_group_killed_mid_run_is_one_death_and_the_next_run_works(
    computer: Computer, name: str
) -> None:
    lang = _available(computer, name)
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    pid = int(run(computer, lang, lang.print_pid).output)
    result = _killed_mid_run(computer, lang, os.getpgid(pid))
    assert_ends_once(result)
    assert result.status == "kernel_died", result.describe()
    assert result.extras.get("state_lost") is True, result.describe()
    assert "SIGKILL" in result.text, result.describe()
    gone = run(computer, lang, lang.show_kept)
    assert "kept-value" not in gone.text, gone.describe()
    alive = run(computer, lang, lang.print_line("alive"))
    assert_ends_once(alive)
    assert alive.status == "ok" and alive.output == "alive\n", alive.describe()


#: A page whose script never lets the load end: Chromium renders until stopped.
HANG = "<p>never loaded</p><script>while (true) {}</script>"


def _chromium_processes() -> list[psutil.Process]:
    return [
        p
        for p in psutil.Process().children(recursive=True)
        if "chrom" in p.name().lower() and p.status() != psutil.STATUS_ZOMBIE
    ]


def _kill_chromium(whole_group: bool) -> None:
    """Wait for Chromium to start, then SIGKILL it (or its whole process group)."""
    # Its first processes have forked theirs: the page is being rendered.
    wait_for(lambda: len(_chromium_processes()) > 2, "the start of Chromium's renderer")
    browser = min(_chromium_processes(), key=lambda p: p.create_time())
    if whole_group:
        os.killpg(os.getpgid(browser.pid), signal.SIGKILL)
    else:
        browser.send_signal(signal.SIGKILL)


@pytest.mark.parametrize("whole_group", [False, True], ids=["browser", "group"])
def test_chromium_killed_while_rendering_ends_the_run_once_and_the_next_render_works(
    computer: Computer, whole_group: bool
) -> None:
    backend = computer.registry.get("html")
    if backend.find_chromium() is None:  # type: ignore[attr-defined]
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    message = {"role": "assistant", "type": "code", "format": "html", "content": HANG}
    killer = threading.Thread(target=_kill_chromium, args=(whole_group,))
    killer.start()  # the render runs while the run is read: kill it from beside
    messages = list(computer.run({**message, "id": "hang"}, timeout=GUARD))
    killer.join(GUARD)
    result = Result("hang", messages)
    assert_ends_once(result)
    assert result.status == "kernel_died", result.describe()
    assert "Chromium" in result.text and "SIGKILL" in result.text, result.describe()
    assert _chromium_processes() == [], "a Chromium process outlived its run"
    shot = list(computer.run({**message, "id": "ok", "content": "<h1>back</h1>"}, timeout=GUARD))
    assert [m.format for m in shot][-2:] == ["base64.png", "active_line"], shot
    assert (shot[-1].extras or {}).get("status") == "ok", shot
