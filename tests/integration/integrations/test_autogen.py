"""LmcCodeExecutor: AutoGen's code executor on a real Computer and on a
RemoteComputer of a real ``lmc serve``, used directly with ``CodeBlock``s as
AutoGen's docs show, and through AgentChat's ``CodeExecutorAgent``."""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing, closing
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("autogen_core", reason="the [autogen] extra is not installed")

from autogen_core import CancellationToken
from autogen_core.code_executor import CodeBlock

from lmc_runtime import Message
from lmc_runtime.integrations._runs import ComputerLike
from lmc_runtime.integrations.autogen import LmcCodeExecutor, LmcCodeResult

from ..lmc_cli import import_without
from .frameworks import KINDS, install_line, kind_of, new_computer

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # AutoGen runs on asyncio


@pytest.fixture(scope="module", params=KINDS)
def computer(request: pytest.FixtureRequest) -> Iterator[ComputerLike]:
    """One computer of each kind for the module, opened sync: the executor reads
    it from a thread."""
    with new_computer(request.param, request) as c:
        yield c


async def execute(executor: LmcCodeExecutor, *blocks: tuple[str, str]) -> LmcCodeResult:
    code_blocks = [CodeBlock(code=code, language=language) for language, code in blocks]
    return await executor.execute_code_blocks(code_blocks, CancellationToken())


async def test_blocks_run_in_order_each_in_its_language_with_state_kept(
    computer: ComputerLike,
) -> None:
    executor = LmcCodeExecutor(computer)
    result = await execute(
        executor, ("python", "n = 6 * 7\nprint(n)"), ("bash", "echo from-bash"), ("py", "print(n)")
    )
    assert (result.exit_code, result.output, result.status) == (0, "42\nfrom-bash\n42\n", "ok")
    assert [m.status for m in result.messages if m.is_final] == ["ok"] * 3
    again = await execute(executor, ("python", "print(n + 1)"))
    assert again.output == "43\n"


async def test_the_first_failing_block_ends_the_call(computer: ComputerLike) -> None:
    result = await execute(
        LmcCodeExecutor(computer), ("python", "print('one')\n1 / 0"), ("python", "print('two')")
    )
    assert (result.exit_code, result.status) == (1, "error")
    assert result.output.startswith("one\n") and "ZeroDivisionError" in result.output
    assert "two" not in result.output


async def test_a_shell_block_gives_its_exit_code(computer: ComputerLike) -> None:
    result = await execute(LmcCodeExecutor(computer), ("sh", "ls /no/such/path 2>/dev/null"))
    assert (result.exit_code, result.status) == (2, "error")


async def test_a_language_the_computer_does_not_run_is_answered_not_raised(
    computer: ComputerLike,
) -> None:
    executor = LmcCodeExecutor(computer)
    result = await execute(executor, ("pwsh", "Write-Output 1"))
    assert result.exit_code == 1 and result.status == "not_understood"
    assert "not understood" in result.output
    assert "pwsh" not in executor.supported_languages
    assert {"python", "sh", "bash", "shell", "javascript"} <= set(executor.supported_languages)


class _Watched:
    """A computer whose runs and restarts the test watches: ``started`` is set once
    a run's output contains ``text`` (in whichever thread reads the run), and
    ``restarted`` lists the languages restarted through it."""

    def __init__(self, computer: ComputerLike, text: str = "") -> None:
        self.computer = computer
        self.text = text
        self.started = threading.Event()
        self.restarted: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.computer, name)

    def _see(self, message: Message) -> None:
        if self.text and message.format == "output" and self.text in message.content:
            self.started.set()

    def run(self, language: str, code: str) -> Iterator[Message]:
        stream = self.computer.run(language, code)  # raises here when it cannot run

        def watched() -> Iterator[Message]:
            with closing(stream):  # type: ignore[type-var]
                for message in stream:
                    self._see(message)
                    yield message

        return watched()

    async def arun(self, language: str, code: str) -> AsyncGenerator[Message, None]:
        async with aclosing(self.computer.arun(language, code)) as stream:
            async for message in stream:
                self._see(message)
                yield message

    def restart(self, language: str) -> None:
        self.restarted.append(language)
        self.computer.restart(language)

    async def arestart(self, language: str) -> None:
        self.restarted.append(language)
        await self.computer.arestart(language)


async def _cancelled_run(computer: ComputerLike) -> tuple[LmcCodeExecutor, LmcCodeResult]:
    """Run code that prints ``started`` and sleeps; cancel the token from another
    thread once ``started`` is out."""
    watched = _Watched(computer, "started")
    executor = LmcCodeExecutor(watched)
    code = "survivor = 5\nprint('started', flush=True)\nimport time\ntime.sleep(600)\n"
    token = CancellationToken()

    def wait_and_cancel() -> None:
        if watched.started.wait(60):
            token.cancel()

    with anyio.fail_after(60):  # a bound on a hang, not a timing
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, wait_and_cancel)
            result = await executor.execute_code_blocks(
                [CodeBlock(code=code, language="python")], token
            )
    return executor, result


@pytest.fixture(params=["opened sync", "opened in the event loop"])
async def either_computer(
    request: pytest.FixtureRequest, computer: ComputerLike
) -> AsyncIterator[ComputerLike]:
    """The module's computer, read from a thread, or one of its kind opened in the
    test's loop."""
    if request.param == "opened sync":
        yield computer
        return
    async with new_computer(kind_of(computer), request) as c:
        yield c


async def test_cancelling_the_token_interrupts_the_code_and_keeps_the_state(
    either_computer: ComputerLike,
) -> None:
    executor, result = await _cancelled_run(either_computer)
    assert (result.exit_code, result.status) == (130, "interrupted")
    assert "KeyboardInterrupt" in result.output
    assert "[lmc] Execution was interrupted" in result.output
    assert result.output.endswith("the kernel's state was kept.\n")
    assert (await execute(executor, ("python", "print(survivor)"))).output == "5\n"


async def test_restart_forgets_the_state_of_the_languages_it_ran(
    either_computer: ComputerLike,
) -> None:
    """Each language once, whatever names the blocks gave it (regression: python
    was restarted twice after blocks in py and python)."""
    computer = _Watched(either_computer)
    executor = LmcCodeExecutor(computer)
    blocks = [("python", "forgotten = 1"), ("PY", "also = 2"), ("bash", "FORGOTTEN=1")]
    await execute(executor, *blocks)
    await executor.restart()
    assert computer.restarted == ["python", "shell"]
    result = await execute(executor, ("shell", 'echo "[$FORGOTTEN]"'), ("python", "forgotten"))
    assert result.output.startswith("[]\n") and "NameError" in result.output


async def test_a_code_executor_agent_runs_the_code_of_a_message(computer: ComputerLike) -> None:
    pytest.importorskip("autogen_agentchat", reason="autogen-agentchat is not installed")
    from autogen_agentchat.agents import ApprovalRequest, ApprovalResponse, CodeExecutorAgent
    from autogen_agentchat.messages import TextMessage

    def approve(request: ApprovalRequest) -> ApprovalResponse:
        return ApprovalResponse(approved="print" in request.code, reason="prints only")

    executor = LmcCodeExecutor(computer)
    agent = CodeExecutorAgent(
        "runner",
        code_executor=executor,
        supported_languages=executor.supported_languages,
        approval_func=approve,
    )
    task = TextMessage(
        content="Run this:\n```python\nprint(2 ** 10)\n```\nand\n```js\nconsole.log(6 * 7)\n```",
        source="user",
    )
    response = await agent.on_messages([task], CancellationToken())
    assert response.chat_message.to_text() == "1024\n42\n"


def test_without_autogen_core_the_import_says_what_to_install(tmp_path: Path) -> None:
    said = import_without(tmp_path, "autogen_core", "lmc_runtime.integrations.autogen")
    assert said == install_line("autogen", "autogen")
