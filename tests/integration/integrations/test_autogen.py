"""LmcCodeExecutor: AutoGen's code executor on a real Computer, used directly with
``CodeBlock``s as AutoGen's docs show, and through AgentChat's ``CodeExecutorAgent``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

pytest.importorskip("autogen_core", reason="the [autogen] extra is not installed")

from autogen_core import CancellationToken
from autogen_core.code_executor import CodeBlock

from lmc_runtime import Computer, Timeouts
from lmc_runtime.integrations.autogen import LmcCodeExecutor, LmcCodeResult

from .frameworks import import_without, install_line

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # AutoGen runs on asyncio


@pytest.fixture(scope="module")
def computer() -> Iterator[Computer]:
    """One Computer for the module, opened sync: the executor reads it from a thread."""
    with Computer(timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c


async def execute(executor: LmcCodeExecutor, *blocks: tuple[str, str]) -> LmcCodeResult:
    code_blocks = [CodeBlock(code=code, language=language) for language, code in blocks]
    return await executor.execute_code_blocks(code_blocks, CancellationToken())


async def test_blocks_run_in_order_each_in_its_language_with_state_kept(
    computer: Computer,
) -> None:
    executor = LmcCodeExecutor(computer)
    result = await execute(
        executor, ("python", "n = 6 * 7\nprint(n)"), ("bash", "echo from-bash"), ("py", "print(n)")
    )
    assert (result.exit_code, result.output, result.status) == (0, "42\nfrom-bash\n42\n", "ok")
    assert [m.status for m in result.messages if m.is_final] == ["ok"] * 3
    again = await execute(executor, ("python", "print(n + 1)"))
    assert again.output == "43\n"


async def test_the_first_failing_block_ends_the_call(computer: Computer) -> None:
    result = await execute(
        LmcCodeExecutor(computer), ("python", "print('one')\n1 / 0"), ("python", "print('two')")
    )
    assert (result.exit_code, result.status) == (1, "error")
    assert result.output.startswith("one\n") and "ZeroDivisionError" in result.output
    assert "two" not in result.output


async def test_a_shell_block_gives_its_exit_code(computer: Computer) -> None:
    result = await execute(LmcCodeExecutor(computer), ("sh", "ls /no/such/path 2>/dev/null"))
    assert (result.exit_code, result.status) == (2, "error")


async def test_a_language_the_computer_does_not_run_is_answered_not_raised(
    computer: Computer,
) -> None:
    executor = LmcCodeExecutor(computer)
    result = await execute(executor, ("pwsh", "Write-Output 1"))
    assert result.exit_code == 1 and result.status == "not_understood"
    assert "not understood" in result.output
    assert "pwsh" not in executor.supported_languages
    assert {"python", "sh", "bash", "shell", "javascript"} <= set(executor.supported_languages)


async def _cancel_once_started(fifo: Path, token: CancellationToken) -> None:
    """In a worker thread: wait until the code opens ``fifo`` and writes to it, then
    cancel the token from that thread."""

    def wait_and_cancel() -> None:
        with fifo.open() as started:
            assert started.read() == "started"
        token.cancel()

    await anyio.to_thread.run_sync(wait_and_cancel)


async def _cancelled_run(executor: LmcCodeExecutor, tmp_path: Path) -> LmcCodeResult:
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    code = (
        "survivor = 5\n"
        f"with open({str(fifo)!r}, 'w') as f:\n    f.write('started')\n"
        "import time\ntime.sleep(600)\n"
    )
    token = CancellationToken()
    with anyio.fail_after(60):  # a bound on a hang, not a timing
        async with anyio.create_task_group() as tg:
            tg.start_soon(_cancel_once_started, fifo, token)
            result = await executor.execute_code_blocks(
                [CodeBlock(code=code, language="python")], token
            )
    return result


@pytest.fixture(params=["opened sync", "opened in the event loop"])
async def either_computer(
    request: pytest.FixtureRequest, computer: Computer
) -> AsyncIterator[Computer]:
    """The module's Computer, read from a thread, or one opened in the test's loop."""
    if request.param == "opened sync":
        yield computer
        return
    async with Computer(timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c


async def test_cancelling_the_token_interrupts_the_code_and_keeps_the_state(
    either_computer: Computer, tmp_path: Path
) -> None:
    executor = LmcCodeExecutor(either_computer)
    result = await _cancelled_run(executor, tmp_path)
    assert (result.exit_code, result.status) == (130, "interrupted")
    assert "KeyboardInterrupt" in result.output
    assert "[lmc] Execution was interrupted" in result.output
    assert result.output.endswith("the kernel's state was kept.\n")
    assert (await execute(executor, ("python", "print(survivor)"))).output == "5\n"


async def test_restart_forgets_the_state_of_the_languages_it_ran(
    either_computer: Computer,
) -> None:
    executor = LmcCodeExecutor(either_computer)
    await execute(executor, ("python", "forgotten = 1"), ("shell", "FORGOTTEN=1"))
    await executor.restart()
    result = await execute(executor, ("shell", 'echo "[$FORGOTTEN]"'), ("python", "forgotten"))
    assert result.output.startswith("[]\n") and "NameError" in result.output


async def test_a_code_executor_agent_runs_the_code_of_a_message(computer: Computer) -> None:
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
