"""JavaScript on real node: what only node does when code is stopped, and a missing node.

What every language does on timeouts, interrupts, deaths and restarts is in
``tests/contract``.
"""

from __future__ import annotations

import os
import shutil
import signal

import pytest

from lmc_runtime import Computer, Timeouts
from tests.integration.conftest import Result, run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


def js_run(computer: Computer, code: str, timeout: float = 30) -> Result:
    return run(computer, code, "javascript", timeout=timeout)


def notices(result: Result) -> str:
    return "".join(
        m.content for m in result.of("console", "output") if m.content.startswith("[lmc]")
    )


def test_a_timeout_names_the_line_and_the_loop_ran_until_then() -> None:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        js_run(c, "const kept = 'yes'")
        result = js_run(c, "let spins = 0\nwhile (true) { spins++ }", timeout=1)
        expected = {"status": "timeout", "state_lost": False, "execution_count": 2}
        assert result.final.extras == expected
        assert "timed out after 1 s at line 2" in notices(result)
        assert js_run(c, "kept + ' ' + (spins > 0)").output == "'yes true'\n"


def test_pending_await_is_abandoned_on_timeout_and_the_session_lives() -> None:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        result = js_run(c, "let before = 3\nawait new Promise(() => {})\nbefore = 99", timeout=1)
        assert result.status == "timeout"
        assert "may still be running" in notices(result)
        assert js_run(c, "before").output == "3\n"


def test_interrupt_stops_the_child_processes_too() -> None:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        result = js_run(c, "require('child_process').execSync('sleep 100')", timeout=1)
        assert result.status == "timeout"
        assert js_run(c, "'next'").output == "'next'\n"


def test_process_exit_names_its_code() -> None:
    with Computer() as c:
        result = js_run(c, "process.exit(3)")
        assert result.status == "restarted"
        assert "process.exit(3)" in notices(result)


def test_node_missing_from_path_is_reported_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with Computer() as c:
        status = c.languages["javascript"]
        assert not status.available
        assert "node is not installed" in (status.reason or "")
        result = run(c, "1", "javascript")
        assert "[lmc] not understood: javascript is not available here" in result.output


def test_a_sigint_alone_never_stops_a_run() -> None:
    """Regression: a SIGINT the stop ladder sent for an earlier run, handed on late
    (libuv gives signals out after the I/O of the same poll, which may have started
    the next run), stopped that next run: a run is stopped only by a stop that names it.
    The SIGINT comes while the run awaits (the pid is printed from a timer): one that
    lands while a statement is evaluated breaks it (``breakOnSigint``, how a busy loop is
    stopped), and sent as soon as the pid came it was now and then still inside the
    first statement."""
    with Computer() as c:
        code = (
            "setTimeout(() => console.log(process.pid), 0)\n"
            "await new Promise(r => setTimeout(r, 300))\n'after'"
        )
        messages = []
        for message in c.run("javascript", code):
            messages.append(message)
            if message.format == "output" and message.content.strip().isdigit():
                os.kill(int(message.content), signal.SIGINT)
        result = Result(messages)
        assert result.status == "ok", result.output
        assert result.output.endswith("'after'\n")
        assert js_run(c, "'next'").status == "ok"
