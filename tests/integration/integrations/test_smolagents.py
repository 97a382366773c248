"""LmcExecutor: smolagents' CodeAgent runs its code actions on a real Computer,
driven by a scripted model: tools called from the code, the agent's variables
sent in, errors observed, and ``final_answer`` ending the run with its value."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("smolagents", reason="the [smolagents] extra is not installed")

from smolagents import CodeAgent, tool  # type: ignore[import-untyped]
from smolagents.monitoring import AgentLogger, LogLevel  # type: ignore[import-untyped]
from smolagents.utils import AgentError  # type: ignore[import-untyped]

from lmc_runtime import Computer
from lmc_runtime.integrations.smolagents import LmcExecutor
from lmc_runtime.remote import RemoteComputer

from ..lmc_cli import import_without
from ..service.server import TOKEN, Server
from .frameworks import install_line
from .scripted_model import Scripted

pytestmark = pytest.mark.integration


@tool  # type: ignore[misc, untyped-decorator]
def kernel_pid() -> int:
    """The id of the process this tool runs in."""
    import os

    return os.getpid()


@tool  # type: ignore[misc, untyped-decorator]
def multiply(a: int, b: int) -> int:
    """Multiply two numbers.

    Args:
        a: the first number
        b: the second number
    """
    return a * b


def action(code: str) -> str:
    return f"Thought: next step.\n<code>\n{code}\n</code>"


@pytest.fixture(scope="module")
def computer() -> Iterator[Computer]:
    with Computer() as c:
        yield c


def agent(computer: Computer | RemoteComputer, model: Scripted) -> CodeAgent:
    quiet = AgentLogger(level=LogLevel.OFF)
    return CodeAgent(
        tools=[multiply, kernel_pid],
        model=model,
        executor=LmcExecutor(computer, logger=quiet),
        verbosity_level=LogLevel.OFF,
        max_steps=4,
    )


def test_a_code_agent_calls_tools_in_the_kernel_and_ends_with_final_answer(
    computer: Computer,
) -> None:
    model = Scripted(
        action("x = multiply(6, 7)\nprint('product', x, 'elsewhere', kernel_pid() != host_pid)"),
        action("final_answer({'x': x, 'pair': (1, 2), 'tags': {'a'}})"),
    )
    result = agent(computer, model).run(
        "Multiply 6 by 7.", additional_args={"host_pid": os.getpid()}
    )
    assert result == {"x": 42, "pair": (1, 2), "tags": {"a"}}
    assert "product 42 elsewhere True" in model.prompts[1]
    assert not model.actions  # both steps ran, and no more


def test_a_code_agent_on_a_remote_computer_runs_in_its_sandboxed_session(
    lmc_server: Server,
) -> None:
    model = Scripted(
        action("import os\nprint('in', os.getcwd())\nx = multiply(3, 5)"),
        action("final_answer([x, kernel_pid() != host_pid])"),
    )
    with RemoteComputer(lmc_server.url, token=TOKEN) as remote:
        result = agent(remote, model).run("Multiply.", additional_args={"host_pid": os.getpid()})
        workspace = remote.info.get("cwd")
    assert result == [15, True]
    assert f"in {workspace}" in model.prompts[1]


def test_an_error_is_an_observation_the_agent_recovers_from(computer: Computer) -> None:
    model = Scripted(
        action("print('before')\nratio = 1 / 0"),
        action("final_answer('recovered')"),
    )
    code_agent = agent(computer, model)
    assert code_agent.run("Divide.") == "recovered"
    assert "before" in model.prompts[1] and "ZeroDivisionError" in model.prompts[1]
    first = code_agent.memory.steps[1]
    assert isinstance(first.error, AgentError) and "ZeroDivisionError" in str(first.error)


def test_the_executor_used_directly(computer: Computer) -> None:
    executor = LmcExecutor(computer, logger=AgentLogger(level=LogLevel.OFF))
    executor.send_variables({"given": [1, 2, 3]})
    done = executor("print(sum(given))\nsum(given) * 2")
    assert (done.logs, done.output, done.is_final_answer) == ("6\n12", None, False)
    with pytest.raises(AgentError, match="NameError"):
        executor("print(undefined_name)")


def test_without_smolagents_the_import_says_what_to_install(tmp_path: Path) -> None:
    said = import_without(tmp_path, "smolagents", "lmc_runtime.integrations.smolagents")
    assert said == install_line("smolagents", "smolagents")
