"""Per-execution environment on real Python and R kernels: ``ExecutionOptions.env`` is
set for that one run (its child processes see it) and restored afterwards, however
the run ends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from lmc_runtime.backends.base import ExecutionOptions, Session, SessionSettings
from lmc_runtime.backends.jupyter import JupyterBackend
from lmc_runtime.backends.python import PythonBackend
from lmc_runtime.backends.r import RBackend
from lmc_runtime.config import Timeouts
from lmc_runtime.messages import Message

pytestmark = pytest.mark.anyio

#: Quotes, a dollar sign, spaces, a newline and non-ASCII text.
VALUE = "a \"quoted\" 'value' with $HOME and `ticks`\nsecond line: é ✓"
NAME = "LMC_TEST_PER_RUN"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class Lang:
    """How one language shows, sets and passes on the variable ``NAME``."""

    backend: Callable[[], JupyterBackend]
    show: str  # prints the variable's value and a newline, or <unset>
    child: str  # prints what `printenv NAME` in a child process prints
    assign: str  # sets the variable to "before" in the interpreter itself
    fail: str
    spin: str  # runs until interrupted


PYTHON = Lang(
    PythonBackend,
    f'import os\nprint(os.environ.get("{NAME}", "<unset>"))',
    f'import subprocess\nprint(subprocess.run(["printenv", "{NAME}"], capture_output=True, '
    'text=True).stdout or "<unset>\\n", end="")',
    f'import os\nos.environ["{NAME}"] = "before"',
    'raise ValueError("boom")',
    "import time\nwhile True:\n    time.sleep(0.05)",
)
R = Lang(
    RBackend,
    f'cat(Sys.getenv("{NAME}", unset = "<unset>"), "\\n", sep = "")',
    f'out <- suppressWarnings(system("printenv {NAME}", intern = TRUE))\n'
    'cat(if (length(out)) paste0(out, "\\n") else "<unset>\\n", sep = "")',
    f'Sys.setenv({NAME} = "before")',
    'stop("boom")',
    "repeat Sys.sleep(0.05)",
)


@pytest.fixture(params=[PYTHON, R], ids=["python", "r"])
async def kernel(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[Lang, Session]]:
    lang: Lang = request.param
    backend = lang.backend()
    availability = backend.availability()
    if not availability.available:
        pytest.skip(f"not available here: {availability.reason}")
    settings = SessionSettings(
        cwd=tmp_path, work_dir=tmp_path / "work", timeouts=Timeouts(startup=60)
    )
    async with anyio.create_task_group() as tg:
        session = await backend.start(tg, settings)
        try:
            yield lang, session
        finally:
            await session.aclose()
            tg.cancel_scope.cancel()


async def run(session: Session, code: str, **options: Any) -> tuple[str, Any]:
    """(the run's output, its final status)."""
    messages: list[Message] = []
    with anyio.fail_after(60):  # a generous bound: only a hang trips it
        async for message in session.execute(code, ExecutionOptions(reply_to="t", **options)):
            messages.append(message)
    output = "".join(
        str(m.content) for m in messages if m.type == "console" and m.format == "output"
    )
    return output, (messages[-1].extras or {}).get("status")


async def test_the_value_is_set_exactly_and_a_child_process_sees_it(
    kernel: tuple[Lang, Session],
) -> None:
    lang, session = kernel
    assert await run(session, lang.show, env={NAME: VALUE}) == (f"{VALUE}\n", "ok")
    assert await run(session, lang.child, env={NAME: VALUE}) == (f"{VALUE}\n", "ok")


async def test_a_variable_that_was_unset_is_unset_again(kernel: tuple[Lang, Session]) -> None:
    lang, session = kernel
    await run(session, lang.show, env={NAME: VALUE})
    assert await run(session, lang.show) == ("<unset>\n", "ok")
    assert await run(session, lang.child) == ("<unset>\n", "ok")


async def test_a_variable_that_was_set_gets_its_value_back(kernel: tuple[Lang, Session]) -> None:
    lang, session = kernel
    await run(session, lang.assign)
    assert await run(session, lang.show, env={NAME: VALUE}) == (f"{VALUE}\n", "ok")
    assert await run(session, lang.show) == ("before\n", "ok")
    assert await run(session, lang.child) == ("before\n", "ok")


async def test_the_environment_is_restored_after_an_error(kernel: tuple[Lang, Session]) -> None:
    lang, session = kernel
    output, status = await run(session, lang.fail, env={NAME: VALUE})
    assert status == "error" and "boom" in output
    assert await run(session, lang.show) == ("<unset>\n", "ok")


async def test_the_environment_is_restored_after_a_timeout(kernel: tuple[Lang, Session]) -> None:
    """The run is interrupted (the kernel and its state are kept), and the
    variable is gone for the next run."""
    lang, session = kernel
    await run(session, lang.assign)
    _, status = await run(session, lang.spin, env={NAME: VALUE}, timeout=1.0, interrupt_grace=10)
    assert status == "timeout"
    assert await run(session, lang.show) == ("before\n", "ok")
