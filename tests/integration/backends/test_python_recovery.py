"""Timeouts, interrupts, dead kernels and restarts on a real ipykernel."""

from __future__ import annotations

import threading

import anyio
import pytest

from lmc_runtime import Computer, Timeouts

from ..conftest import run


def test_infinite_loop_times_out_is_interrupted_and_state_survives(computer: Computer) -> None:
    run(computer, "survivor = 7")
    result = run(computer, "print('partial')\nwhile True: pass", timeout=1.5)
    assert result.output.startswith("partial\n")
    assert "timed out after 1.5 s at line 2" in result.output
    assert result.status == "timeout"
    assert result.final.extras["state_lost"] is False  # type: ignore[index]
    assert run(computer, "print(survivor)").output == "7\n"


def test_code_that_ignores_interrupts_gets_its_kernel_restarted(computer: Computer) -> None:
    run(computer, "doomed = 1")
    code = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(0.01)"
    result = run(computer, code, timeout=1.0)
    assert result.status == "timeout"
    assert "restarted" in result.output and "state" in result.output
    assert result.final.extras["state_lost"] is True  # type: ignore[index]
    after = run(computer, "print('doomed' in dir())")
    assert after.output == "False\n"


@pytest.mark.parametrize(
    ("code", "phrases"),
    [
        pytest.param("import os\nos._exit(1)", ["exited with code 1"], id="os._exit"),
        pytest.param("import ctypes\nctypes.string_at(0)", ["SIGSEGV"], id="segfault"),
        pytest.param(
            "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
            ["SIGKILL", "out-of-memory"],
            id="sigkill-as-from-the-oom-killer",
        ),
    ],
)
def test_a_dead_kernel_is_reported_restarted_and_the_next_run_works(
    computer: Computer, code: str, phrases: list[str]
) -> None:
    result = run(computer, code)
    assert result.status == "kernel_died"
    assert result.final.extras["state_lost"] is True  # type: ignore[index]
    assert "restarted" in result.output
    for phrase in phrases:
        assert phrase in result.output
    assert run(computer, "print('alive')").output == "alive\n"


def test_a_kernel_that_dies_while_idle_is_restarted_and_reported_next_run() -> None:
    with Computer() as c:
        run(c, "import os, threading\nthreading.Timer(0.2, os._exit, (3,)).start()")
        anyio.run(anyio.sleep, 1.0)  # let the timer fire while no request is open
        result = run(c, "print('back')")
    assert "Since the last run, the kernel exited with code 3" in result.output
    assert result.output.endswith("back\n")


def test_restart_loses_state(computer: Computer) -> None:
    run(computer, "temp = 1")
    computer.restart("python")
    assert run(computer, "print('temp' in dir())").output == "False\n"


def test_exit_in_user_code_restarts_and_says_so(computer: Computer) -> None:
    result = run(computer, "gone = 1\nexit()")
    assert result.status == "restarted"
    assert "asked the kernel to exit" in result.output
    assert run(computer, "print('gone' in dir())").output == "False\n"


def test_leaving_the_stream_early_interrupts_the_code(computer: Computer) -> None:
    stream = computer.run(
        "python", "import time\nprint('start', flush=True)\ntime.sleep(60)\nprint('never')"
    )
    for message in stream:
        if message.format == "output":
            break
    stream.close()
    # The next execution queues behind the interrupted one; it must come quickly.
    assert run(computer, "print('next')").output == "next\n"


def test_async_api_interrupt_from_another_task() -> None:
    async def main() -> list[str]:
        statuses: list[str] = []
        async with Computer(timeouts=Timeouts(interrupt_grace=2)) as c:
            async with anyio.create_task_group() as tg:

                async def consume() -> None:
                    async for m in c.arun("python", "import time\ntime.sleep(60)"):
                        if m.format == "active_line" and m.content == 2:
                            tg.start_soon(c.ainterrupt)
                        if m.format == "active_line" and m.content is None:
                            statuses.append(m.extras["status"])  # type: ignore[index]

                tg.start_soon(consume)
        return statuses

    assert anyio.run(main) == ["interrupted"]


def test_async_use_requires_entering_the_computer() -> None:
    from lmc_runtime import UsageError

    async def main() -> None:
        async for _ in Computer().arun("python", "1"):
            pass

    with pytest.raises(UsageError):
        anyio.run(main)


def test_concurrent_sync_runs_are_serialized_per_language(computer: Computer) -> None:
    outputs: list[str] = []

    def worker(n: int) -> None:
        outputs.append(run(computer, f"import time\ntime.sleep(0.2)\nprint({n})").output)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outputs) == ["0\n", "1\n", "2\n"]


def test_an_exception_in_the_sync_caller_mid_run_frees_the_session(computer: Computer) -> None:
    """Regression: Ctrl-C (or any signal that raises) in a thread blocked in run()
    left the step running in the event loop, holding the session forever."""
    import os
    import signal

    class Stop(Exception):
        pass

    def raise_stop(signum: int, frame: object) -> None:
        raise Stop

    previous = signal.signal(signal.SIGUSR1, raise_stop)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGUSR1))
    timer.start()
    try:
        with pytest.raises(Stop):
            for _ in computer.run("python", "import time\ntime.sleep(60)"):
                pass
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert run(computer, "print('free')").output == "free\n"
