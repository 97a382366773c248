"""Adversarial probes of lmc-runtime's promises, on real ipykernels.

The promises under attack (README, and the executor's docstrings): every
message gets an answer; malformed input, unknown languages and code that hangs,
floods output, crashes or misbehaves each get a clear computer-role message;
never a hang and never an exception into the caller's loop (except
``UsageError`` for API misuse); nothing lost; output in order; timeouts and
``interrupt()`` really stop the code; a dead kernel is reported and restarted;
``input()`` is answered by ``on_input`` or fails fast; the last message of
every execution is ``console``/``active_line`` with content ``None``.

Tests that pass pin behaviour that holds. Tests marked
``xfail(strict=True, reason="BUG: ...")`` document a promise that is broken
today; each reason names the input, what happens and what was expected.

Every test is bounded: executions carry timeouts, threads are joined with a
timeout, and nothing waits on the kernel without a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from lmc_runtime import Computer, Limits, Message, Timeouts, UsageError

from .conftest import Result, run

PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def code_msg(content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "type": "code", "format": "python", "content": content, **extra}


def assert_well_formed(result: Result, reply_to: str | None = None) -> None:
    """The invariants every execution must satisfy."""
    assert result.messages, "no answer at all"
    final = result.final
    assert final.type == "console" and final.format == "active_line" and final.content is None, (
        f"last message is not active_line null: {final!r}"
    )
    assert all(m.role == "computer" for m in result.messages)
    assert [m for m in result.messages if m.format == "active_line" and m.content is None] == [
        final
    ]
    if reply_to is not None:
        assert all(m.in_reply_to == reply_to for m in result.messages)


def collect(computer: Computer, *args: Any, **kwargs: Any) -> Result:
    return Result(list(computer.run(*args, **kwargs)))


@pytest.fixture(scope="module")
def c() -> Iterator[Computer]:
    """One shared session with a short default timeout, as an agent loop would use it."""
    with Computer(timeouts=Timeouts(execution=15, interrupt_grace=1.0)) as computer:
        yield computer


# -- malformed and odd messages ------------------------------------------------

NON_STR_KEY: dict[Any, Any] = {**code_msg("1"), 1: 2}


@pytest.mark.parametrize(
    ("message", "phrase"),
    [
        pytest.param(None, "JSON object", id="None"),
        pytest.param(5, "JSON object", id="int"),
        pytest.param(b"print(1)", "JSON object", id="bytes"),
        pytest.param({}, "role", id="empty-dict"),
        pytest.param(code_msg(None), "must be a string", id="content-None"),
        pytest.param(code_msg({"nested": {"a": [1]}}), "must be a string", id="content-dict"),
        pytest.param(code_msg(b"print(1)"), "must be a string", id="content-bytes"),
        pytest.param(code_msg("1", id=5), "id", id="int-id"),
        pytest.param(code_msg("1", id=float("nan")), "id", id="nan-id"),
        pytest.param(code_msg("1", created_at=float("nan")), "created_at", id="nan-created_at"),
        pytest.param(code_msg("1", extras=float("nan")), "extras", id="nan-extras"),
        pytest.param(NON_STR_KEY, "Keys should be strings", id="non-str-key"),
        pytest.param({**code_msg("1"), "format": None}, "language", id="format-None"),
        pytest.param({**code_msg("1"), "format": "py thon"}, "language", id="format-space"),
    ],
)
def test_malformed_messages_get_one_not_understood_reply(
    c: Computer, message: Any, phrase: str
) -> None:
    replies = list(c.run(message))
    assert len(replies) == 1
    (reply,) = replies
    assert reply.role == "computer" and reply.format == "output"
    assert reply.content.startswith("[lmc] not understood:")
    assert phrase in reply.content
    assert reply.extras and reply.extras["status"] == "malformed"


def test_odd_but_valid_messages_run(c: Computer) -> None:
    huge_id = "x" * 100_000
    result = collect(c, code_msg("print(3)", id=huge_id))
    assert_well_formed(result, huge_id)
    assert result.output == "3\n"
    # Language names are case-insensitive; a missing id gets a fresh one.
    result = collect(c, {**code_msg("print(2)", id=None), "format": "PYTHON"})
    assert_well_formed(result)
    assert result.output == "2\n" and result.final.in_reply_to
    # Cyclic extras cannot be written as JSON: one not-understood reply that
    # names the field, never a hang or a traceback.
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    (reply,) = list(c.run(code_msg("1", extras=cyclic)))
    assert reply.content.startswith("[lmc] not understood:") and "'extras'" in reply.content


def test_nul_bytes_in_code_are_a_python_syntax_error(c: Computer) -> None:
    result = run(c, "x = 1\x00")
    assert_well_formed(result)
    assert result.status == "error"
    assert "null bytes" in result.output


def test_huge_code_runs(c: Computer) -> None:
    result = run(c, "x = 1\n" + "#" * 5_000_000 + "\nprint('big code ok')")
    assert_well_formed(result)
    assert result.output == "big code ok\n"


def test_code_with_a_lone_surrogate_is_answered_as_malformed() -> None:
    """Regression: code with a lone surrogate could not be serialized to the kernel and
    ended as an internal error; it is now refused with a precise reason."""
    with Computer(timeouts=Timeouts(execution=10)) as comp:
        (reply,) = comp.run("python", "print('\ud800')")
        assert reply.extras["status"] == "malformed"  # type: ignore[index]
        assert "lone surrogate" in reply.content
        assert run(comp, "print('fine')").output == "fine\n"


def test_a_mapping_that_raises_is_answered_not_raised(c: Computer) -> None:
    """Regression: a Mapping whose get()/iteration raises (here RuntimeError) escapes into the  caller's loop: intake.accept calls message.get('id') outside its try, and  messages.parse_message only turns pydantic's ValidationError into MessageError"""

    class Broken(Mapping[str, Any]):
        def __getitem__(self, key: str) -> Any:
            raise RuntimeError("broken mapping")

        def __iter__(self) -> Iterator[str]:
            raise RuntimeError("broken mapping")

        def __len__(self) -> int:
            return 4

    replies = list(c.run(Broken()))
    assert len(replies) == 1 and replies[0].content.startswith("[lmc] not understood")


@pytest.mark.parametrize("timeout", [float("nan"), -1.0, 0.0])
def test_a_bad_per_run_timeout_is_refused(c: Computer, timeout: float) -> None:
    """Regression: run(timeout=...) is not validated (Timeouts validates its fields,  Computer.arun does not): NaN gives '[lmc] internal error ... deadline must not be NaN'  with no final active_line null; -1 and 0 run the code anyway and then report  'Execution timed out after -1 s'. Expected UsageError/ValueError like Timeouts(...)"""
    with pytest.raises((UsageError, ValueError)):
        list(c.run("python", "print(1)", timeout=timeout))


# -- code that ends in odd ways ------------------------------------------------


@pytest.mark.parametrize(
    ("code", "ename"),
    [
        ("import sys\nsys.exit(3)", "SystemExit"),
        ("raise SystemExit", "SystemExit"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt"),
        ("def f(): return f()\nf()", "RecursionError"),
    ],
)
def test_exits_and_self_raised_interrupts_are_errors_and_keep_state(
    c: Computer, code: str, ename: str
) -> None:
    run(c, "kept_state = 'yes'")
    result = run(c, code)
    assert_well_formed(result)
    assert result.status == "error"
    assert any((m.extras or {}).get("error") == ename for m in result.messages)
    assert run(c, "print(kept_state)").output == "yes\n"


@pytest.mark.parametrize("code", ["exit()", "quit()"])
def test_exit_restarts_and_says_so(c: Computer, code: str) -> None:
    run(c, "gone = 1")
    result = run(c, code)
    assert_well_formed(result)
    assert result.status == "restarted" and result.final.extras["state_lost"] is True  # type: ignore[index]
    assert run(c, "print('gone' in dir())").output == "False\n"


def test_do_shutdown_from_user_code_is_reported_and_recovered(c: Computer) -> None:
    run(c, "marker = 1\nget_ipython().kernel.do_shutdown(False)")
    deadline = time.monotonic() + 8
    outputs = []
    while time.monotonic() < deadline:  # the kernel's loop stops 0.1 s later, then it exits
        result = run(c, "print('marker' in dir())")
        assert_well_formed(result)
        outputs.append(result.output)
        if result.output != "True\n":
            break
        time.sleep(0.2)
    assert "the kernel exited with code 0" in outputs[-1], outputs[-3:]
    back = run(c, "print('back')")
    # Output the fresh kernel flushed after its first run ended may come here,
    # marked late and tagged with that run; nothing else may.
    own = [m for m in back.of("console", "output") if not (m.extras or {}).get("late")]
    assert "".join(str(m.content) for m in own) == "back\n"


def _kernel_pid(comp: Computer) -> int:
    return int(run(comp, "import os\nmarker = 1\nprint(os.getpid())").output)


def test_a_kernel_killed_between_runs_is_reported_on_the_next_run() -> None:
    with Computer(timeouts=Timeouts(execution=10)) as comp:
        os.kill(_kernel_pid(comp), signal.SIGKILL)
        time.sleep(1.5)  # the watcher restarts it meanwhile
        result = run(comp, "print('marker' in dir())")
    assert_well_formed(result)
    assert "Since the last run, the kernel was killed by SIGKILL" in result.output
    assert result.output.endswith("False\n")


def test_a_kernel_death_while_the_caller_handles_the_last_message_is_reported() -> None:
    """Regression (silent state loss): a kernel that dies while the caller is still handling the  final active_line null of a run is restarted but NEVER reported: the run's route is  still registered, so JupyterKernel._watch (kernel.py, 'if self._routes: broadcast')  puts KernelGone into a route nobody reads instead of setting unreported_death"""
    with Computer(timeouts=Timeouts(execution=10)) as comp:
        pid = _kernel_pid(comp)
        for m in comp.run("python", "print('hi')"):
            if m.format == "active_line" and m.content is None:
                os.kill(pid, signal.SIGKILL)
                time.sleep(1.5)
        result = run(comp, "print('marker' in dir())")
    assert result.output.endswith("False\n")
    assert "killed by SIGKILL" in result.output, "state was lost without a word"


def test_a_kernel_death_after_an_unsendable_message_is_still_reported() -> None:
    """Regression (silent state loss): code the client cannot serialize (a lone surrogate) leaks  its route: kernel.py JupyterKernel.request registers it in _routes before send()  raises, and nothing releases it; every later idle-time kernel death is then broadcast  into that dead route and never reported (kernel.py _watch), e.g. do_shutdown(False)  or the OOM killer silently wipes the state"""
    with Computer(timeouts=Timeouts(execution=10)) as comp:
        run(comp, "print('\ud800')")
        os.kill(_kernel_pid(comp), signal.SIGKILL)
        time.sleep(1.5)
        result = run(comp, "print('marker' in dir())")
    assert result.output.endswith("False\n")
    assert "killed by SIGKILL" in result.output, "state was lost without a word"


def test_fork_in_user_code_does_not_confuse_the_session(c: Computer) -> None:
    code = (
        "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\n"
        "os.waitpid(pid, 0)\nprint('parent')"
    )
    result = run(c, code)
    assert_well_formed(result)
    assert result.output == "parent\n"
    # A forked child that stays alive inside the kernel does not break later runs.
    result = run(
        c, "import os\nif os.fork() == 0:\n    import time; time.sleep(3); os._exit(0)\nprint('p')"
    )
    assert_well_formed(result)
    assert result.output == "p\n"
    assert run(c, "print('after fork')").output == "after fork\n"


def test_monkeypatched_print_behaves_as_in_jupyter(c: Computer) -> None:
    run(
        c,
        "import builtins\n_orig_print = builtins.print\nbuiltins.print = lambda *a, **k: _orig_print('X', *a, **k)",
    )
    try:
        assert run(c, "print(1)").output == "X 1\n"
    finally:
        run(c, "builtins.print = _orig_print")
    assert run(c, "print(1)").output == "1\n"


def test_code_that_closes_sys_stdout_gets_clear_errors_as_in_jupyter() -> None:
    with Computer(timeouts=Timeouts(execution=10)) as comp:
        closed = run(comp, "import sys\nsys.stdout.close()")
        later = run(comp, "print('x')")
        stderr = run(comp, "import sys\nprint('still', file=sys.stderr)")
    for result in (closed, later, stderr):
        assert_well_formed(result)
    assert later.status == "error" and "I/O operation on closed file" in later.output
    assert stderr.output == "still\n"


# -- output shapes ------------------------------------------------------------


def test_print_without_newline_then_sleep_streams_before_the_end(c: Computer) -> None:
    stamps: list[tuple[float, Message]] = []
    start = time.monotonic()
    for m in c.run(
        "python", "print('a', end='', flush=True)\nimport time\ntime.sleep(1)\nprint('b')"
    ):
        stamps.append((time.monotonic() - start, m))
    result = Result([m for _, m in stamps])
    assert_well_formed(result)
    assert result.output == "ab\n"
    first_a = next(t for t, m in stamps if m.format == "output" and m.content.startswith("a"))
    assert first_a < 0.8, "partial line was held back until the end"


def test_carriage_return_progress_bar_is_passed_through_in_order(c: Computer) -> None:
    code = "import time\nfor i in range(5):\n    print(f'\\r{i}', end='', flush=True); time.sleep(0.05)\nprint()"
    result = run(c, code)
    assert_well_formed(result)
    assert result.output == "\r0\r1\r2\r3\r4\n"


def test_unicode_output_is_intact(c: Computer) -> None:
    result = run(c, "print('é☃😀\\u200b')")
    assert result.output == "é☃😀\u200b\n"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("%time x = 1", "Wall time"),
        ("!echo hi", "hi"),
        ("%%bash\necho from-bash\necho to-stderr >&2", "from-bash\n"),
    ],
)
def test_magics_behave_as_in_jupyter(c: Computer, code: str, expected: str) -> None:
    result = run(c, code)
    assert_well_formed(result)
    assert result.status == "ok"
    assert expected in result.output


def test_ten_megabytes_in_one_write_is_cut_to_the_budget_and_saved(c: Computer) -> None:
    result = run(c, "import sys\nn = sys.stdout.write('x' * 10_000_000 + '\\nEND\\n')")
    assert_well_formed(result)
    cut = [
        m for m in result.of("console", "output") if (m.extras or {}).get("status") == "truncated"
    ]
    assert len(cut) == 1
    extras = cut[0].extras or {}
    assert extras["total_bytes"] == 10_000_005
    assert len(result.output.encode()) < 300_000
    assert result.output.endswith("\nEND\n")
    with open(extras["output_path"], encoding="utf-8") as fh:
        saved = fh.read()
    assert len(saved) == 10_000_005 and saved.endswith("\nEND\n")


def test_ten_thousand_small_images_all_arrive_in_order(c: Computer) -> None:
    code = (
        "from IPython.display import display, Image\nimport base64\n"
        f"png = base64.b64decode('{PNG_1X1}')\n"
        "for i in range(10000):\n    display(Image(data=png))\nprint('done')"
    )
    result = run(c, code, timeout=25)
    assert_well_formed(result)
    assert len(result.of("image", "base64.png")) == 10_000
    assert result.output == "done\n"
    last_image = max(i for i, m in enumerate(result.messages) if m.type == "image")
    done_at = next(i for i, m in enumerate(result.messages) if m.content == "done\n")
    assert done_at > last_image


@pytest.fixture(scope="module")
def small_budget() -> Iterator[Computer]:
    with Computer(
        timeouts=Timeouts(execution=10, interrupt_grace=1.0), limits=Limits(output_bytes=1000)
    ) as computer:
        yield computer


def test_withheld_output_keeps_its_place_relative_to_displays(small_budget: Computer) -> None:
    """Regression (order): text past the first half of the output budget is withheld and  sent in one plain message just before the final active_line, so with  Limits(output_bytes=1000), print('a'*600); display(HTML(..)); print('after') delivers  the last 100 'a's AFTER the html message (output.py within_budget/OutputBudget.finish)"""
    result = run(
        small_budget,
        "print('a' * 600)\nfrom IPython.display import display, HTML\n"
        "display(HTML('<b>x</b>'))\nprint('after')",
    )
    assert_well_formed(result)
    html_at = next(i for i, m in enumerate(result.messages) if m.format == "html")
    before = "".join(m.content for m in result.messages[:html_at] if m.format == "output")
    assert before == "a" * 600 + "\n"


def test_withheld_stderr_and_notices_keep_their_extras(small_budget: Computer) -> None:
    """Regression (lost extras): withheld text is re-sent as one plain output, so a traceback  or stderr that crosses the head of the budget loses extras.stream='stderr' and  extras.error, and an '[lmc] Execution timed out' notice loses extras.status/state_lost/ line (output.py within_budget: replies.output(cut.text, reply_to) drops per-message extras)"""
    error = run(small_budget, "print('p' * 450)\n1/0")
    timeout = run(small_budget, "print('a' * 600, flush=True)\nwhile True: pass", timeout=1)
    assert_well_formed(error)
    assert_well_formed(timeout)
    trace = [m for m in error.of("console", "output") if "ZeroDivisionError" in m.content]
    assert trace and all((m.extras or {}).get("stream") == "stderr" for m in trace)
    notices = [
        m for m in timeout.of("console", "output") if "[lmc] Execution timed out" in m.content
    ]
    assert notices and all((m.extras or {}).get("status") == "timeout" for m in notices)


def test_active_line_does_not_overtake_earlier_output(c: Computer) -> None:
    """Regression (order): print('first'); time.sleep(0.4) yields active_line 3 BEFORE the  output 'first\\n' every time: the in-kernel sampler (kernels/lmc-python/lmc_startup.py,  LineSampler.sample) publishes on IOPub at once while the text still sits in ipykernel's  OutStream buffer (flushed every 0.2 s); it should flush stdout/stderr first"""
    result = run(c, "print('first')\nimport time\ntime.sleep(0.4)\nprint('second')")
    assert_well_formed(result)
    kinds = [m.content if m.format == "output" else f"line {m.content}" for m in result.messages]
    assert kinds.index("first\n") < kinds.index("line 3")


def test_output_of_a_background_thread_between_cells_is_not_lost(c: Computer) -> None:
    """Regression (lost output): a background thread that keeps printing after its cell  finished loses everything it prints while no cell runs: ipykernel parents it to the  finished request, whose route is released, so kernel.py _read drops it silently  (expected: delivered, e.g. with the next run, since nothing may be lost)"""
    first = run(
        c,
        "import threading, time\ndef bg():\n    for i in range(20):\n"
        "        print('bg', i, flush=True); time.sleep(0.05)\n"
        "threading.Thread(target=bg, daemon=True).start()",
    )
    time.sleep(1.3)
    second = run(c, "print('next')")
    assert_well_formed(first)
    assert_well_formed(second)
    seen = first.output + second.output
    assert all(f"bg {i}\n" in seen for i in range(20))


# -- input() ---------------------------------------------------------------------


class Answers:
    """An on_input callback whose behaviour each test sets."""

    def __init__(self) -> None:
        self.callback: Any = lambda prompt: "unset"

    def __call__(self, prompt: str) -> Any:
        return self.callback(prompt)


@pytest.fixture(scope="module")
def answers() -> Answers:
    return Answers()


@pytest.fixture(scope="module")
def ic(answers: Answers) -> Iterator[Computer]:
    """A session whose input() is answered by ``answers``; input timeout 1 s."""
    with Computer(
        timeouts=Timeouts(execution=10, interrupt_grace=1.0, input=1.0), on_input=answers
    ) as computer:
        yield computer


def test_input_in_a_loop_with_a_callback_and_getpass_masking(
    ic: Computer, answers: Answers
) -> None:
    replies = iter(f"ans{i}" for i in range(100))
    answers.callback = lambda prompt: next(replies)
    result = run(ic, "for i in range(5):\n    print(input(f'q{i}? '))")
    secret = run(ic, "import getpass\nprint(getpass.getpass('pw: '))")
    assert_well_formed(result)
    assert result.output == "".join(f"q{i}? ans{i}\nans{i}\n" for i in range(5))
    assert secret.output == "pw: ****\nans5\n"


def test_input_from_a_thread_of_the_cell_is_answered(ic: Computer, answers: Answers) -> None:
    answers.callback = lambda prompt: "t-ans"
    result = run(
        ic,
        "import threading\nr = []\nt = threading.Thread(target=lambda: r.append(input('t? ')))\n"
        "t.start(); t.join()\nprint(r)",
    )
    assert_well_formed(result)
    assert result.output.endswith("['t-ans']\n")


def _boom(prompt: str) -> str:
    raise RuntimeError("boom")


def _slow(prompt: str) -> str:
    time.sleep(3)
    return "late"


@pytest.mark.parametrize(
    ("callback", "phrase"),
    [
        pytest.param(_boom, "RuntimeError('boom')", id="raises"),
        pytest.param(lambda p: 5, "returned int, not str", id="returns-int"),
        pytest.param(lambda p: None, "returned NoneType, not str", id="returns-None"),
        pytest.param(_slow, "no answer in time", id="slower-than-the-input-timeout"),
    ],
)
def test_a_failing_input_callback_interrupts_fast_and_keeps_state(
    ic: Computer, answers: Answers, callback: Any, phrase: str
) -> None:
    answers.callback = callback
    run(ic, "kept = 1")
    start = time.monotonic()
    result = run(ic, "x = input('q? ')\nprint('got', x)")
    assert time.monotonic() - start < 3
    assert_well_formed(result)
    assert phrase in result.output
    assert result.status == "interrupted" and result.final.extras["state_lost"] is False  # type: ignore[index]
    assert run(ic, "print(kept)").output == "1\n"


def test_an_unencodable_input_answer_is_a_clear_error(ic: Computer, answers: Answers) -> None:
    """Regression: on_input returning a string with a lone surrogate ('\\ud800') makes  stdin.send_input raise UnicodeEncodeError outside _answer_input's try  (execution.py _answer_input); the run ends with '[lmc] internal error in lmc-runtime'  and no final active_line null"""
    answers.callback = lambda prompt: "\ud800"
    result = run(ic, "print(repr(input('s? ')))")
    assert "internal error" not in result.output
    assert_well_formed(result)


def test_an_async_input_callback_is_awaited() -> None:
    async def answer(prompt: str) -> str:
        await asyncio.sleep(0.05)
        return "async-ans"

    with Computer(timeouts=Timeouts(execution=10), on_input=answer) as comp:
        result = run(comp, "print(input('a? '))")
    assert_well_formed(result)
    assert result.output == "a? async-ans\nasync-ans\n"


def test_interrupt_during_a_pending_input_callback_stops_promptly_and_keeps_state() -> None:
    """Regression: interrupt() while an on_input callback is still running does not end the  run until the callback returns (execution.py _answer_input awaits the callback bounded  only by the input timeout; the answer is then echoed as if input() got it), and by then  the grace deadline has expired, so _next() returns None before reading the queued  KeyboardInterrupt/execute_reply and the kernel is rest"""
    called = threading.Event()

    def slow(prompt: str) -> str:
        called.set()
        time.sleep(1.5)  # well within the input timeout, longer than interrupt_grace
        return "stale"

    with Computer(
        timeouts=Timeouts(execution=10, interrupt_grace=0.5, input=5.0), on_input=slow
    ) as comp:
        run(comp, "kept = 1")
        box: dict[str, Any] = {}

        def runner() -> None:
            box["result"] = run(comp, "x = input('slow? ')\nprint('got', x)")
            box["ended"] = time.monotonic()

        thread = threading.Thread(target=runner)
        thread.start()
        assert called.wait(5)
        interrupted = time.monotonic()
        comp.interrupt()
        thread.join(15)
        assert not thread.is_alive()
        after = run(comp, "print(kept)")
    result: Result = box["result"]
    assert_well_formed(result)
    assert result.status == "interrupted"
    assert result.final.extras["state_lost"] is False, result.output  # type: ignore[index]
    assert after.output == "1\n"
    assert box["ended"] - interrupted < 1.0


# -- timeouts and interrupts -----------------------------------------------------


def test_a_timeout_smaller_than_kernel_startup_on_the_first_run_does_not_count_startup() -> None:
    with Computer(timeouts=Timeouts(execution=0.05)) as comp:
        result = run(comp, "print('first')")
    assert_well_formed(result)
    assert result.status == "ok" and result.output == "first\n"


def test_a_startup_failure_is_reported_on_every_run() -> None:
    with Computer(timeouts=Timeouts(execution=1, startup=0.05)) as comp:
        for _ in range(2):
            replies = list(comp.run("python", "print(1)"))
            assert replies and "did not become ready within 0.05 s" in replies[0].content


def test_a_startup_failure_still_ends_with_active_line_null() -> None:
    """Regression: backend failures (kernel start timeout, bad cwd, ...) are answered with one  '[lmc] the python backend failed' notice and NO final active_line null  (computer.py arun: the BackendError branch yields only replies.notice)"""
    with Computer(timeouts=Timeouts(execution=1, startup=0.05)) as comp:
        result = run(comp, "print(1)")
    assert_well_formed(result)


def test_a_child_process_ignoring_sigint_does_not_defeat_the_timeout(c: Computer) -> None:
    run(c, "kept = 'k'")
    result = run(
        c,
        "import subprocess\nsubprocess.run(['bash', '-c', 'trap \"\" INT; sleep 30'])",
        timeout=1.0,
    )
    assert_well_formed(result)
    assert result.status == "timeout"
    assert run(c, "print(kept)").output == "k\n"
    shell = run(c, "!bash -c 'trap \"\" INT; echo started; sleep 30'", timeout=1.0)
    assert_well_formed(shell)
    assert shell.status == "timeout" and "started" in shell.output


def test_os_system_ignoring_sigint_gets_the_kernel_restarted(c: Computer) -> None:
    start = time.monotonic()
    result = run(c, 'import os\nos.system("bash -c \'trap \\"\\" INT; sleep 30\'")', timeout=1.0)
    assert time.monotonic() - start < 8
    assert_well_formed(result)
    assert result.status == "timeout" and result.final.extras["state_lost"] is True  # type: ignore[index]
    assert run(c, "print('ok')").output == "ok\n"


def test_interrupt_with_nothing_running_is_harmless(c: Computer) -> None:
    c.interrupt()
    c.interrupt("python")
    result = run(c, "print('still fine')")
    assert_well_formed(result)
    assert result.output == "still fine\n" and result.status == "ok"
    fresh = Computer()
    fresh.interrupt()  # before the Computer was ever opened
    fresh.close()


def test_interrupting_an_unknown_language_does_not_interrupt_python(c: Computer) -> None:
    """Regression: interrupt('cobol') interrupts the running python code: Computer.ainterrupt  resolves an unknown language to None and None means 'every session'  (computer.py ainterrupt); restart('cobol') raises UsageError, interrupt should too  (or do nothing)"""
    box: dict[str, Result] = {}
    thread = threading.Thread(
        target=lambda: box.setdefault("r", run(c, "import time\ntime.sleep(2)\nprint('finished')"))
    )
    thread.start()
    time.sleep(0.7)
    with contextlib.suppress(UsageError):
        c.interrupt("cobol")
    thread.join(10)
    assert box["r"].status == "ok" and box["r"].output == "finished\n"


def test_a_fast_execution_read_slowly_is_not_reported_as_timed_out(c: Computer) -> None:
    """Regression: the deadline is only checked when the caller pulls the next message, and an  expired deadline wins over messages already queued (execution.py Execution._next):  print('a') with timeout=0.5, read by a consumer that takes 1 s per message, finishes  in milliseconds but is reported 'Execution timed out after 0.5 s' (and SIGINT is sent  to the idle kernel)"""
    messages: list[Message] = []
    for m in c.run("python", "print('a')", timeout=0.5):
        if not messages:
            time.sleep(1.0)  # the caller is busy with the first message
        messages.append(m)
    result = Result(messages)
    assert_well_formed(result)
    assert result.status == "ok"


def test_a_slow_consumer_does_not_turn_an_interrupt_into_a_restart(c: Computer) -> None:
    """Regression: after a timeout's SIGINT, a consumer slower than interrupt_grace makes  _next() see the grace deadline expired before it reads the queued KeyboardInterrupt/ execute_reply, so the kernel is restarted and state lost although time.sleep stopped  at once (execution.py Execution._next / messages)"""
    run(c, "kept = 1")
    messages: list[Message] = []
    code = "import time\nprint('a', flush=True)\ntime.sleep(30)"
    for m in c.run("python", code, timeout=0.5):
        if len(messages) < 2:
            time.sleep(1.2)  # longer than interrupt_grace (1 s)
        messages.append(m)
    result = Result(messages)
    assert_well_formed(result)
    assert result.status == "timeout"
    assert result.final.extras["state_lost"] is False  # type: ignore[index]
    assert run(c, "print(kept)").output == "1\n"


def test_a_held_open_run_does_not_block_the_next_run_forever(c: Computer) -> None:
    """Regression (hang): while a run()'s generator is held open but not iterated, its  execution timeout never fires (the deadline is only checked on pull) and another  run() on the same Computer blocks forever on the session's semaphore  (backend.py JupyterSession.execute / execution.py); expected the timeout to stop the  code and the second run to proceed (or a UsageError)"""
    held = c.run("python", "print('held', flush=True)\nwhile True: pass", timeout=1.0)
    next(held)
    done = threading.Event()
    box: dict[str, Result] = {}

    def second() -> None:
        box["r"] = run(c, "print('second')")
        done.set()

    thread = threading.Thread(target=second, daemon=True)
    thread.start()
    try:
        assert done.wait(4), "second run still blocked 3 s after the first run's timeout"
    finally:
        # Unblock the second run so the session survives this test.
        held.close()  # type: ignore[attr-defined]
        thread.join(15)
    assert box["r"].output == "second\n"


def test_breaking_out_of_run_repeatedly_stops_the_code_and_keeps_state(c: Computer) -> None:
    run(c, "kept = 41")
    for i in range(4):
        start = time.monotonic()
        for message in c.run(
            "python", f"print('go{i}', flush=True)\nimport time\nwhile True: time.sleep(0.01)"
        ):
            first = message
            break
        assert time.monotonic() - start < 5
        assert first.content == f"go{i}\n"
    for _ in range(2):
        stream = c.run("python", "print('spin', flush=True)\nwhile True: pass")
        next(stream)
        del stream  # closed by refcounting
    result = run(c, "print(kept + 1)")
    assert_well_formed(result)
    assert result.output == "42\n"


def test_restart_while_code_runs_in_another_thread(c: Computer) -> None:
    box: dict[str, Result] = {}
    thread = threading.Thread(
        target=lambda: box.setdefault(
            "r", run(c, "import time\nprint('start', flush=True)\ntime.sleep(10)")
        )
    )
    thread.start()
    time.sleep(1.0)
    c.restart("python")
    thread.join(10)
    assert not thread.is_alive()
    result = box["r"]
    assert_well_formed(result)
    assert result.status == "restarted" and result.final.extras["state_lost"] is True  # type: ignore[index]
    assert result.output.startswith("start\n")
    assert run(c, "print('after restart')").output == "after restart\n"


def test_close_while_a_blocked_run_is_in_progress_in_another_thread() -> None:
    comp = Computer(timeouts=Timeouts(execution=10))
    run(comp, "1")
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["r"] = run(comp, "import time\nprint('start', flush=True)\ntime.sleep(10)")
        except BaseException as exc:  # the assertion below reports it
            box["exc"] = exc

    thread = threading.Thread(target=runner)
    thread.start()
    time.sleep(1.0)
    comp.close()
    thread.join(10)
    assert not thread.is_alive() and "exc" not in box
    assert_well_formed(box["r"])
    with pytest.raises(UsageError):
        run(comp, "print(1)")


def test_close_between_messages_does_not_raise_into_the_callers_loop() -> None:
    """Regression: close() (from another thread, or from the loop body) while the caller is  between two messages of run() makes the next step raise RuntimeError('This portal is  not running') into the caller's loop (computer.py run: portal.start_task_soon on a  closed portal), and logs 'aclose(): asynchronous generator is already running';  expected the run to end with the 'session was closed' notice an"""
    comp = Computer(timeouts=Timeouts(execution=10))
    run(comp, "1")
    messages: list[Message] = []
    try:
        for m in comp.run(
            "python", "import time\nprint('x', flush=True)\ntime.sleep(2)\nprint('y')"
        ):
            messages.append(m)
            if m.content == "x\n":
                closer = threading.Thread(target=comp.close)
                closer.start()
                closer.join(15)
        assert_well_formed(Result(messages))
    finally:
        comp.close()


def test_two_computers_at_once_are_independent() -> None:
    box: dict[int, list[Any]] = {}
    errors: list[BaseException] = []

    def go(k: int) -> None:
        try:
            with Computer(timeouts=Timeouts(execution=60)) as comp:
                first = run(
                    comp, f"import os, time\nv = {k}\ntime.sleep(0.3)\nprint(v, os.getpid())"
                )
                second = run(comp, "print(v)")
                box[k] = [first.output.split()[1:2], second.output, first.status]
        except BaseException as exc:  # reported below, not lost with the thread
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(box) == [0, 1], box
    assert box[0][1] == "0\n" and box[1][1] == "1\n", box
    assert box[0][0] != box[1][0], "two Computers shared one kernel"


def test_async_break_and_cancel_free_the_session() -> None:
    async def main() -> list[Any]:
        async with Computer(timeouts=Timeouts(execution=10, interrupt_grace=1.0)) as comp:
            async for _ in comp.arun("python", "kept = 3"):
                pass
            async for _m in comp.arun("python", "print('loop', flush=True)\nwhile True: pass"):
                break

            async def forever() -> None:
                async for _m in comp.arun("python", "import time\nwhile True: time.sleep(0.01)"):
                    pass

            with anyio.move_on_after(0.5):
                await forever()
            return [m.content async for m in comp.arun("python", "print(kept * 2)")]

    assert anyio.run(main) == ["6\n", None]


# -- lmc run (the CLI) -----------------------------------------------------------


def _lmc_run(data: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "run", "-", "--timeout", "10"],
        input=data,
        capture_output=True,
        timeout=60,
        check=False,
    )


def _line(content: str, msg_id: str) -> bytes:
    return (json.dumps(code_msg(content, id=msg_id)) + "\n").encode()


def test_lmc_run_answers_around_a_line_that_is_not_utf8(tmp_path: Path) -> None:
    """Regression (CLI): one line that is not UTF-8 in an input FILE makes `lmc run FILE` crash with  UnicodeDecodeError (cli.py _cmd_run reads the source as strict UTF-8 text) and, since  the decoder works on whole 8 KiB chunks, even the valid messages BEFORE it get no  answer; expected a 'not understood' line for the bad line and answers for the others"""
    source = tmp_path / "messages.jsonl"
    source.write_bytes(_line("print(1)", "a") + b"\xff\xfe not utf-8\n" + _line("print(2)", "b"))
    done = subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "run", str(source), "--timeout", "10"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    out = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert done.returncode == 0, done.stderr.decode()[-500:]
    assert [m.get("in_reply_to") for m in out if m["format"] == "active_line"] == ["a", "b"]


def test_lmc_run_survives_a_surrogate_in_a_message_id() -> None:
    """\\ud800 echoed in in_reply_to, and cli.py _write's json.dumps(..., ensure_ascii=False) then  cannot be written to UTF-8 stdout: UnicodeEncodeError kills `lmc run` and every later  message goes unanswered"""
    bad = b'{"role": "assistant", "type": "code", "format": "python", "content": "print(1)", "id": "\\ud800"}\n'
    done = _lmc_run(bad + _line("print(2)", "b"))
    assert done.returncode == 0, done.stderr.decode()[-500:]
    out = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert out[-1]["in_reply_to"] == "b" and out[-1]["content"] is None


def test_an_abandoned_run_whose_threads_keep_printing_never_blocks_the_kernel(c: Computer) -> None:
    """Regression (wedge): a run whose caller left early kept its route open, so
    the output its threads went on printing filled that route's buffer, the
    reader blocked on it, and every later run on the session waited forever."""
    code = (
        "import threading, time\n"
        "def spam():\n"
        "    for i in range(30000):\n"
        "        print('spam', i, flush=True)\n"
        "threading.Thread(target=spam, daemon=True).start()\n"
        "time.sleep(3)"
    )
    stream = c.run("python", code)
    next(stream)
    stream.close()  # the caller leaves; the code is interrupted
    done = threading.Event()
    box: dict[str, Result] = {}

    def later() -> None:
        box["r"] = run(c, "print('next')")
        done.set()

    threading.Thread(target=later, daemon=True).start()
    assert done.wait(60), "the session is wedged after an abandoned run"
    assert box["r"].status == "ok" and "next\n" in box["r"].output
