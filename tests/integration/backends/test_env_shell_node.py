"""Per-execution variables on real shells and node: set for one run, then put back.

The contract tests check the common cases in every language; these guard what
is particular to the shells (quoting typed into a terminal, names a shell
cannot set, an interrupt mid-run) and to node (an async run, a run stopped
while its promise still waits, a chosen node executable).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends import ExecutionOptions, SessionSettings
from lmc_runtime.backends.node import NodeBackend
from lmc_runtime.backends.typescript import TypeScriptBackend
from tests.integration.conftest import Result, run, run_interrupting

pytestmark = pytest.mark.integration

NAME = "LMC_ENV_TEST"
#: Quotes of both kinds, a dollar, spaces, a backslash, a newline and a marker-like escape.
TRICKY = 'it\'s "q" $HOME ${X} `id` \\ a\nsecond line\x1b]x'

SHELLS = [name for name in ("bash", "sh", "zsh") if shutil.which(name)]
#: Prints the variable, or <unset>, in each shell.
SHOW_SH = f'if [ -n "${{{NAME}+x}}" ]; then printf "%s\\n" "${NAME}"; else echo "<unset>"; fi'
SHOW_JS = f"console.log(process.env.{NAME} ?? '<unset>')"
has_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture
def computer() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=3.0)) as c:
        yield c


def go(computer: Computer, language: str, code: str, **kwargs: object) -> Result:
    return run(computer, code, language, timeout=kwargs.pop("timeout", 30), **kwargs)


@pytest.mark.parametrize("shell", SHELLS)
def test_shell_value_arrives_verbatim_and_an_unset_variable_is_unset_after(
    computer: Computer, shell: str
) -> None:
    """Guards the quoting of values typed into the terminal and the unset after the run."""
    result = go(computer, shell, SHOW_SH, env={NAME: TRICKY})
    assert result.status == "ok" and result.output == TRICKY + "\n", result.messages
    # A child process sees it too: it is exported, not only a shell variable.
    child = go(computer, shell, f"env | grep -c '^{NAME}='", env={NAME: "x"})
    assert child.output == "1\n"
    assert go(computer, shell, SHOW_SH).output == "<unset>\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_shell_puts_back_a_value_the_code_set_before(computer: Computer, shell: str) -> None:
    go(computer, shell, f"export {NAME}='before it'")
    changed = go(computer, shell, f"{SHOW_SH}\n{NAME}=changed-by-code", env={NAME: "during"})
    assert changed.output == "during\n"
    assert go(computer, shell, SHOW_SH).output == "before it\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_shell_restores_after_an_interrupt_and_an_error(computer: Computer, shell: str) -> None:
    """Guards the restore when the run line never got past the cell (SIGINT)."""
    stopped = run_interrupting(
        computer,
        f"{SHOW_SH}\nsleep 30",
        shell,
        lambda m: m.format == "output" and "during" in str(m.content),
        env={NAME: "during"},
        timeout=60,
    )
    assert stopped.status == "interrupted", stopped.messages
    assert go(computer, shell, SHOW_SH).output == "<unset>\n"
    failed = go(computer, shell, "false", env={NAME: "during"})
    assert failed.status == "error"
    assert go(computer, shell, SHOW_SH).output == "<unset>\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_shell_leaves_out_a_name_it_cannot_set_and_says_so(computer: Computer, shell: str) -> None:
    result = go(computer, shell, SHOW_SH, env={"NOT-A-NAME": "x", NAME: "kept"})
    assert "NOT-A-NAME" in result.output and "kept\n" in result.output
    assert result.status == "ok"
    assert go(computer, shell, SHOW_SH).output == "<unset>\n"


#: A variable each shell keeps read-only: bash's own, and the marker prompt in sh.
READ_ONLY = {"bash": "UID", "sh": "PS1", "zsh": "PPID"}


@pytest.mark.parametrize("shell", SHELLS)
def test_shell_a_read_only_name_is_left_out_and_the_next_run_still_runs(
    computer: Computer, shell: str
) -> None:
    """Regression: putting back a read-only variable (``UID``; sh's ``PS1``) aborted
    the whole typed line of the next run, whose code never ran; a variable the code
    made read-only did the same."""
    name = READ_ONLY[shell]
    result = go(computer, shell, SHOW_SH, env={name: "x", NAME: "kept"})
    assert f"lmc: {name} is read-only" in result.output and "kept\n" in result.output
    assert result.status == "ok", result.messages
    assert go(computer, shell, "echo next-ran").output == "next-ran\n"
    made = go(computer, shell, f"readonly {NAME}", env={NAME: "frozen"})
    assert made.status == "ok", made.messages
    assert go(computer, shell, "echo still-runs").output == "still-runs\n"


@has_node
def test_node_async_run_sees_its_value_after_an_await_and_then_it_is_unset(
    computer: Computer,
) -> None:
    """Guards the restore after the run's awaits, not when its first statement returns."""
    code = f"await new Promise((r) => setTimeout(r, 50))\n{SHOW_JS}"
    result = go(computer, "javascript", code, env={NAME: TRICKY})
    assert result.status == "ok" and result.output == TRICKY + "\n", result.messages
    assert go(computer, "javascript", SHOW_JS).output == "<unset>\n"


@has_node
def test_node_restores_a_set_value_after_a_timeout_and_an_error(computer: Computer) -> None:
    go(computer, "javascript", f"process.env.{NAME} = 'before'")
    stopped = go(computer, "javascript", "while (true) {}", env={NAME: "during"}, timeout=1.0)
    assert stopped.status == "timeout", stopped.messages
    assert go(computer, "javascript", SHOW_JS).output == "before\n"
    waiting = go(computer, "javascript", "await new Promise(() => {})", env={NAME: "x"}, timeout=1)
    assert waiting.status == "timeout", waiting.messages
    assert go(computer, "javascript", SHOW_JS).output == "before\n"
    failed = go(computer, "javascript", "throw new Error('boom')", env={NAME: "during"})
    assert failed.status == "error"
    assert go(computer, "javascript", SHOW_JS).output == "before\n"


@has_node
def test_typescript_runs_see_their_env(computer: Computer) -> None:
    if not TypeScriptBackend().availability().available:
        pytest.skip("the typescript package is not installed")
    show = f"const v: string = process.env.{NAME} ?? '<unset>'\nconsole.log(v)"
    assert go(computer, "typescript", show, env={NAME: TRICKY}).output == TRICKY + "\n"
    assert go(
        computer, "typescript", show.replace("const v", "const w").replace("(v)", "(w)")
    ).output == ("<unset>\n")


def test_node_given_by_a_path_that_is_missing_or_not_node(tmp_path: Path) -> None:
    missing = NodeBackend(node=tmp_path / "no-such-node").availability()
    assert not missing.available and "no node executable at" in (missing.reason or "")
    impostor = tmp_path / "node"
    impostor.write_text("#!/bin/sh\necho 'hello from a script'\n")
    impostor.chmod(0o755)
    wrong = NodeBackend(node=impostor).availability()
    assert not wrong.available
    assert "is not node" in (wrong.reason or "") and "hello from a script" in (wrong.reason or "")


@has_node
def test_node_given_by_its_path_is_the_one_that_runs(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node is not None
    link = tmp_path / "my-node"
    link.symlink_to(node)
    backend = NodeBackend(node=link)
    assert backend.availability().available

    async def argv0() -> list[str]:
        settings = SessionSettings(cwd=tmp_path, work_dir=tmp_path / "work")
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                session = await backend.start(tg, settings)
                options = ExecutionOptions("c1", timeout=30)
                said = [str(m.content) async for m in session.execute("process.argv0", options)]
                await session.aclose()
                tg.cancel_scope.cancel()
        return said

    assert f"'{link}'\n" in anyio.run(argv0)
