"""Frameworks' own E2B integrations, pointed at ``lmc serve`` by E2B's
environment variables alone: smolagents' ``E2BExecutor`` (a CodeAgent with
``executor_type="e2b"``) and LangChain's ``langchain-e2b`` sandbox backend."""

from __future__ import annotations

import re

import pytest

from tests.integration.service.server import Server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_a_smolagents_code_agent_on_its_e2b_executor_runs_in_lmc_serve(e2b_env: Server) -> None:
    smolagents = pytest.importorskip("smolagents")
    from smolagents.monitoring import LogLevel

    from tests.integration.integrations.scripted_model import Scripted

    model = Scripted(
        "Thought: compute.\n<code>\nimport os\nx = 6 * 7\nprint('cwd', os.getcwd())\n</code>",
        "Thought: done.\n<code>\nfinal_answer({'x': x})\n</code>",
    )
    agent = smolagents.CodeAgent(
        tools=[], model=model, executor_type="e2b", verbosity_level=LogLevel.OFF, max_steps=4
    )
    try:
        result = agent.run("Multiply 6 by 7.")
    finally:
        agent.cleanup()
    assert result == {"x": 42}
    # smolagents joins the run's stdout pieces with newlines; a print may come in two.
    assert re.search(r"cwd\s+/home/user", model.prompts[1]), model.prompts[1]


def test_langchains_e2b_backend_runs_commands_and_files_in_lmc_serve(e2b_env: Server) -> None:
    pytest.importorskip("langchain_e2b")
    import e2b
    from langchain_e2b import E2BSandbox

    sbx = e2b.Sandbox.create(timeout=120)
    try:
        backend = E2BSandbox(sandbox=sbx)
        done = backend.execute("echo $((6 * 7)) && whoami")
        assert (done.output, done.exit_code) == ("42\nuser\n", 0)
        assert backend.write("/home/user/notes/a.txt", "first line\nsecond line\n").error is None
        read = backend.read("/home/user/notes/a.txt")
        assert "second line" in str(read)
        listed = backend.ls("/home/user/notes")
        assert "a.txt" in str(listed)
        failed = backend.execute("exit 3")
        assert failed.exit_code == 3
    finally:
        sbx.kill()
