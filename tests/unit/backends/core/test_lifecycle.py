"""The interpreter's life: start failures, deaths mid-run and while idle, restarts, shutdown."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest

from lmc_runtime.errors import KernelStalled, KernelStartError
from lmc_runtime.messages import Message
from lmc_runtime.replies import Status

from ....fakes import FakeBackend
from .harness import LIMIT, extras, finals, outputs, settings, started, until

pytestmark = pytest.mark.anyio

_SIGKILL = -signal.SIGKILL
_SIGSEGV = -signal.SIGSEGV


async def test_a_death_mid_run_ends_it_with_kernel_died_and_the_line(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        messages = await h.run(f"print a\nline 7\ndie {_SIGKILL}")
        assert messages[0].content == "a\n", "what came before the death is still said"
        notice, final = messages[-2:]
        assert notice.status == Status.KERNEL_DIED
        assert notice.content.startswith(
            "[lmc] The fake died at line 7: fake was killed by SIGKILL"
        )
        assert "State lost; it has been restarted." in notice.content
        assert extras(notice) | {"line": 7} == extras(notice)
        assert extras(final) == {"status": "kernel_died", "state_lost": True, "exit_code": _SIGKILL}
        assert len(finals(messages)) == 1
        after = await h.run("print b", reply_to="c2")
    assert outputs(after) == ["b\n"], "the next run is on a new interpreter, with no news"
    assert len(h.backend.interpreters) == 2


async def test_a_death_while_idle_is_the_first_news_of_the_next_run(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        await h.run("print a")
        h.fake.die(_SIGSEGV)
        await h.backend.until_attempts(2)
        messages = await h.run("print b", reply_to="c2")
    news = messages[0]
    assert news.status == Status.KERNEL_DIED and news.in_reply_to == "c2"
    assert "Since the last run, fake crashed with a segmentation fault" in news.content
    assert extras(news)["state_lost"] is True and extras(news)["exit_code"] == _SIGSEGV
    assert outputs(messages)[1:] == ["b\n"] and messages[-1].status == Status.OK


async def test_a_death_while_idle_is_reported_once(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        h.fake.die(1)
        await h.backend.until_attempts(2)
        first = await h.run("print a")
        second = await h.run("print b")
    assert first[0].status == Status.KERNEL_DIED
    assert [m.content for m in second] == ["b\n", None]


async def test_code_that_ends_its_interpreter_is_restarted(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        messages = await h.run("print bye\nline 2\nexit 3")
        after = await h.run("print again")
    notice, final = messages[-2:]
    assert notice.status == Status.RESTARTED
    assert "The code called exit(3) at line 2: the fake was restarted" in notice.content
    assert extras(final) == {"status": "restarted", "state_lost": True, "exit_code": 3}
    assert outputs(after) == ["again\n"] and len(h.backend.interpreters) == 2


async def test_a_start_failure_is_a_kernel_start_error_and_leaves_nothing(tmp_path: Path) -> None:
    backend = FakeBackend(start_failures=["no fake here"])
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            with pytest.raises(KernelStartError, match="no fake here"):
                await backend.start(tg, settings(tmp_path))
    assert backend.interpreters[0].kills >= 1


async def test_a_start_that_stalls_is_replaced_by_a_fresh_interpreter_once(
    tmp_path: Path,
) -> None:
    """Regression: a Python kernel that answered probes on IOPub only failed the
    session's start after the whole startup timeout; a fresh one is tried at once."""
    backend = FakeBackend(start_failures=[KernelStalled("answered on IOPub only")])
    async with started(tmp_path, backend) as h:
        messages = await h.run("print a")
    assert outputs(messages) == ["a\n"] and backend.attempts == 2
    assert backend.interpreters[0].kills >= 1, "the stalled one is killed"


async def test_a_start_that_stalls_twice_fails(tmp_path: Path) -> None:
    stalls = [KernelStalled("stalled"), KernelStalled("stalled again")]
    backend = FakeBackend(start_failures=list(stalls))
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            with pytest.raises(KernelStalled, match="stalled again"):
                await backend.start(tg, settings(tmp_path))
    assert backend.attempts == 2


async def test_a_failed_restart_is_retried_by_the_next_run(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        h.backend.start_failures.append("the first relaunch fails")
        h.fake.die(1)
        await h.backend.until_attempts(2)
        messages = await h.run("print a")
    assert messages[0].status == Status.KERNEL_DIED
    assert outputs(messages)[1:] == ["a\n"] and h.backend.attempts == 3


async def test_a_run_whose_restart_fails_raises_and_the_one_after_tries_again(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        h.backend.start_failures += ["relaunch fails", "and again"]
        h.fake.die(1)
        await h.backend.until_attempts(2)
        with pytest.raises(KernelStartError, match="and again"):
            await h.run("print a")
        messages = await h.run("print b")
    assert messages[0].status == Status.KERNEL_DIED, "the death is still news"
    assert outputs(messages)[1:] == ["b\n"]


async def test_a_death_mid_run_whose_restart_fails_says_so(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        # The relaunch after the death fails, and so does the retry when the run ends.
        h.backend.start_failures += ["no fake now", "no more fakes"]
        messages = await h.run("die 1")
        after = await h.run("print b")
    assert "restarting it failed (no more fakes); the next run will try again" in (
        messages[-2].content
    )
    assert messages[-1].status == Status.KERNEL_DIED and outputs(after) == ["b\n"]
    assert h.backend.attempts == 4


async def test_restart_replaces_the_interpreter(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        await h.run("print a")
        first = h.fake
        await h.session.restart()
        messages = await h.run("print b")
    assert first.kills and h.fake is not first
    assert [m.content for m in messages] == ["b\n", None], "a restart asked for is no news"


async def test_shutdown_mid_run_ends_the_run_closed(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        run = h.execute("print a\nwedge")
        await until(run, lambda m: m.content == "a\n")
        await h.session.aclose()
        rest = [m async for m in run]
    notice, final = rest
    assert notice.status == Status.CLOSED and "The session was closed" in notice.content
    assert final.is_final and final.status == Status.CLOSED
    assert extras(final)["state_lost"] is True and h.fake.kills


async def test_a_run_after_shutdown_is_refused(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        await h.session.aclose()
        with pytest.raises(KernelStartError, match="closed"):
            await h.run("print a")


async def test_a_run_waiting_for_its_turn_at_shutdown_is_refused(tmp_path: Path) -> None:
    refused: list[BaseException] = []
    async with started(tmp_path) as h:
        first = h.execute("print a\nwedge")
        await until(first, lambda m: m.content == "a\n")
        async with anyio.create_task_group() as tg:

            async def queued() -> None:
                try:
                    await h.run("print b", reply_to="c2")
                except KernelStartError as exc:
                    refused.append(exc)

            tg.start_soon(queued)
            await anyio.wait_all_tasks_blocked()
            await h.session.aclose()
            assert [m async for m in first][-1].status == Status.CLOSED
    assert len(refused) == 1


async def test_a_restart_after_a_stop_that_fails_is_retried_by_the_next_run(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        h.backend.start_failures.append("no fake now")
        messages = await h.run("wedge", timeout=0.05, interrupt_grace=0.05)
        after = await h.run("print b")
    assert messages[-1].status == Status.TIMEOUT and extras(messages[-1])["state_lost"] is True
    assert outputs(after) == ["b\n"] and h.backend.attempts == 3


async def test_a_run_that_starts_during_a_restart_waits_for_it(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        h.backend.launch_gate = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(h.session.restart)
            await h.backend.until_attempts(1)  # the first launch, at start
            await anyio.wait_all_tasks_blocked()
            runs: list[list[Message]] = []

            async def run() -> None:
                runs.append(await h.run("print a"))

            tg.start_soon(run)
            await anyio.wait_all_tasks_blocked()
            h.backend.launch_gate.set()
    assert outputs(runs[0]) == ["a\n"]
    assert h.backend.attempts == 2, "one restart, not one more for the run"


async def test_a_run_that_begins_while_a_death_is_handled_runs_on_the_new_interpreter(
    tmp_path: Path,
) -> None:
    async with started(tmp_path) as h:
        dead = h.fake
        h.backend.kill_gate = anyio.Event()
        dead.die(1)
        await anyio.wait_all_tasks_blocked()  # the watcher is cleaning up after it
        async with anyio.create_task_group() as tg:
            runs: list[list[Message]] = []

            async def run() -> None:
                runs.append(await h.run("print a"))

            tg.start_soon(run)
            await anyio.wait_all_tasks_blocked()
            h.backend.kill_gate.set()
    news, *rest = runs[0]
    assert news.status == Status.KERNEL_DIED and "Since the last run" in news.content
    assert outputs(rest) == ["a\n"] and rest[-1].status == Status.OK
    assert dead.codes == [] and h.fake.codes == ["print a"]


async def test_a_death_after_a_run_left_before_its_end_was_read_is_news(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        run = h.execute("err a\nprint b", reply_to="c1")
        await until(run, lambda m: m.content == "a\n")
        await run.aclose()  # its end was there, unread
        h.fake.die(1)
        await h.backend.until_attempts(2)
        messages = await h.run("print c", reply_to="c2")
    assert messages[0].status == Status.KERNEL_DIED and "Since the last run" in messages[0].content
    assert outputs(messages)[1:] == ["c\n"]
