"""The shell interpreter on its own: runs end at the marker, lines are keyed, ends told apart."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from lmc_runtime.backends import ExecutionOptions, SessionSettings
from lmc_runtime.backends.core import Finished, Line, Output, Route
from lmc_runtime.backends.shell.dialect import BashDialect, Dialect, ShDialect
from lmc_runtime.backends.shell.interpreter import ShellInterpreter
from lmc_runtime.config import Timeouts
from lmc_runtime.replies import Status

pytestmark = pytest.mark.anyio

#: Bounds every wait: only a wedge comes near it.
LIMIT = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Recorder:
    """A ``deliver`` that keeps (item, key) pairs and wakes whoever waits for one."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, object]] = []
        self._changed = anyio.Event()

    async def __call__(self, item: Any, key: object) -> None:
        self.items.append((item, key))
        self._changed.set()

    async def until(self, done: Callable[[], bool]) -> None:
        with anyio.fail_after(LIMIT):
            while not done():
                self._changed = anyio.Event()
                await self._changed.wait()

    def finished(self) -> list[tuple[Finished, object]]:
        return [(item, key) for item, key in self.items if isinstance(item, Finished)]

    def output(self) -> str:
        return "".join(item.text for item, _ in self.items if isinstance(item, Output))


async def started(
    tmp_path: Path, dialect: Dialect
) -> AsyncIterator[tuple[ShellInterpreter, Recorder]]:
    if dialect.find() is None:
        pytest.skip(f"{dialect.program} is not installed")
    work = tmp_path / "work"
    work.mkdir()
    settings = SessionSettings(cwd=tmp_path, work_dir=work, timeouts=Timeouts(startup=LIMIT))
    argv = dialect.argv(dialect.find() or dialect.program)
    shell = ShellInterpreter(dialect, argv, settings, {"PATH": "/usr/bin:/bin", "TERM": "dumb"})
    recorder = Recorder()
    async with anyio.create_task_group() as tg:
        await shell.launch(tg, recorder)
        try:
            yield shell, recorder
        finally:
            await shell.kill()
            tg.cancel_scope.cancel()


async def submit(shell: ShellInterpreter, code: str, key: int, **options: Any) -> None:
    await shell.submit(code, ExecutionOptions("c", **options), Route(key, "c"))


@pytest.fixture
async def sh(tmp_path: Path) -> AsyncIterator[tuple[ShellInterpreter, Recorder]]:
    async for pair in started(tmp_path, ShDialect()):
        yield pair


@pytest.fixture
async def bash(tmp_path: Path) -> AsyncIterator[tuple[ShellInterpreter, Recorder]]:
    async for pair in started(tmp_path, BashDialect()):
        yield pair


async def test_a_run_ends_at_the_marker_with_its_exit_code(sh: Any) -> None:
    shell, recorder = sh
    await submit(shell, "echo hi\n(exit 3)", 1)
    await recorder.until(lambda: bool(recorder.finished()))
    [(done, key)] = recorder.finished()
    assert key == 1 and done.status == Status.ERROR
    assert done.extras == {"exit_code": 3, "execution_count": 1, "state_lost": False}
    assert recorder.output() == "hi\n"


async def test_lines_are_keyed_by_their_run(bash: Any) -> None:
    shell, recorder = bash
    await submit(shell, "true\nsleep 0.2\ntrue", 7)
    await recorder.until(lambda: bool(recorder.finished()))
    lines = [(item.line, key) for item, key in recorder.items if isinstance(item, Line)]
    assert (2, 7) in lines and all(key == 7 for _, key in lines)


async def test_exit_in_the_code_is_the_codes_own_end(bash: Any) -> None:
    shell, recorder = bash
    await submit(shell, "echo bye\nexit 4", 1)
    with anyio.fail_after(LIMIT):
        gone = await shell.wait()
    assert gone.by_code and gone.exit_code == 4 and "status 4" in gone.description
    assert recorder.output() == "bye\n"


async def test_a_signal_is_a_death_not_an_exit(sh: Any) -> None:
    shell, _ = sh
    await submit(shell, "kill -9 $$", 1)
    with anyio.fail_after(LIMIT):
        gone = await shell.wait()
    assert not gone.by_code and not gone.intentional and "SIGKILL" in gone.description


async def test_the_idle_shell_owns_its_terminal_and_kill_ends_it(sh: Any) -> None:
    shell, _ = sh
    assert shell.foreground_group() == shell.pid
    await shell.kill()
    with anyio.fail_after(LIMIT):
        await shell.wait()
    assert not list(shell.work_dir.glob("cell-*"))
