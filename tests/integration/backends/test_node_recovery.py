"""JavaScript on real node: timeouts, interrupts, process.exit and crashes."""

from __future__ import annotations

import os
import shutil
import signal
import threading

import anyio
import pytest

from lmc_runtime import Computer, Timeouts
from tests.integration.conftest import Result, run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


def js_run(computer: Computer, code: str, timeout: float = 30) -> Result:
    return run(computer, code, "javascript", timeout=timeout)


def node_pid(computer: Computer) -> int:
    return int(js_run(computer, "process.pid").output)


def notices(result: Result) -> str:
    return "".join(
        m.content for m in result.of("console", "output") if m.content.startswith("[lmc]")
    )


def test_while_true_stopped_by_a_timeout_keeps_the_state() -> None:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        js_run(c, "const kept = 'yes'")
        result = js_run(c, "let spins = 0\nwhile (true) { spins++ }", timeout=1)
        assert result.status == "timeout"
        assert result.final.extras == {"status": "timeout", "state_lost": False}
        assert "timed out after 1 s at line 2" in notices(result)
        assert js_run(c, "kept + ' ' + (spins > 0)").output == "'yes true'\n"


def test_busy_loop_in_a_callback_is_restarted_after_the_grace_period() -> None:
    with Computer(timeouts=Timeouts(interrupt_grace=1.0)) as c:
        js_run(c, "var lost = 1")
        result = js_run(
            c, "await new Promise(r => setTimeout(() => { while (true) {} }, 0))", timeout=1
        )
        assert result.status == "timeout"
        assert (result.final.extras or {}).get("state_lost") is True
        text = notices(result)
        assert "did not stop within 1 s of an interrupt, so node was restarted" in text
        after = js_run(c, "typeof lost")
        assert after.output == "'undefined'\n"
        assert after.status == "ok"


def test_pending_await_is_abandoned_on_timeout_and_the_session_lives() -> None:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        result = js_run(c, "let before = 3\nawait new Promise(() => {})\nbefore = 99", timeout=1)
        assert result.status == "timeout"
        assert "may still be running" in notices(result)
        assert js_run(c, "before").output == "3\n"


def test_interrupt_from_another_thread_stops_a_busy_loop() -> None:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        js_run(c, "1")
        timer = threading.Timer(0.5, c.interrupt)
        timer.start()
        try:
            result = js_run(c, "while (true) {}")
        finally:
            timer.cancel()
        assert result.status == "interrupted"
        assert "was interrupted at line 1; node's state was kept" in notices(result)
        assert js_run(c, "'alive'").output == "'alive'\n"


def test_interrupt_stops_the_child_processes_too() -> None:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        result = js_run(c, "require('child_process').execSync('sleep 100')", timeout=1)
        assert result.status == "timeout"
        assert js_run(c, "'next'").output == "'next'\n"


def test_process_exit_restarts_the_session_with_a_notice() -> None:
    with Computer() as c:
        js_run(c, "const gone = 1")
        result = js_run(c, "console.log('bye')\nprocess.exit(3)")
        assert "bye\n" in result.output
        assert result.status == "restarted"
        assert (result.final.extras or {}).get("state_lost") is True
        assert "process.exit(3)" in notices(result)
        assert js_run(c, "typeof gone").output == "'undefined'\n"


def test_killed_node_mid_run_is_reported_and_restarted() -> None:
    with Computer() as c:
        pid = node_pid(c)
        threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
        result = js_run(c, "await new Promise(r => setTimeout(r, 20000))")
        assert result.status == "kernel_died"
        assert "SIGKILL" in notices(result)
        assert node_pid(c) != pid


def test_node_killed_between_runs_is_reported_by_the_next_run() -> None:
    async def scenario() -> None:
        async with Computer() as c:

            async def collect(code: str) -> Result:
                with anyio.fail_after(30):
                    return Result([m async for m in c.arun("javascript", code)])

            pid = int((await collect("process.pid")).output)
            os.kill(pid, signal.SIGKILL)
            # Usually the watcher has seen the death before the next run starts ("since
            # the last run"); if the run got there first, it is told node died under it.
            result = await collect("'back'")
            assert "node was killed by SIGKILL" in notices(result)
            if result.status != "ok":
                assert result.status == "kernel_died"
                result = await collect("'back'")
            assert result.output.endswith("'back'\n")
            assert result.status == "ok"

    anyio.run(scenario)


def test_caller_that_stops_reading_interrupts_the_code() -> None:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        stream = c.run("javascript", "console.log('start')\nwhile (true) {}")
        for message in stream:
            if message.format == "output":
                break
        stream.close()  # type: ignore[attr-defined]
        assert js_run(c, "'free again'").output == "'free again'\n"


def test_restart_on_request_loses_the_state() -> None:
    with Computer() as c:
        js_run(c, "const x = 5")
        c.restart("javascript")
        assert js_run(c, "typeof x").output == "'undefined'\n"


def test_node_missing_from_path_is_reported_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with Computer() as c:
        status = c.languages["javascript"]
        assert not status.available
        assert "node is not installed" in (status.reason or "")
        result = run(c, "1", "javascript")
        assert "[lmc] not understood: javascript is not available here" in result.output
