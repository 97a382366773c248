"""Careless and hostile code against the shell and JavaScript backends.

What every language must do (one final message, stops, deaths) is in
``tests/contract``; these are the shells' and node's own traps.

Each test names what it guards. Every execution must end with exactly one
``active_line`` null whose status is accurate, and the session must answer the
next execution. Hang bounds are the execution timeouts (generous, so a loaded
machine does not trip them); nothing here asserts on timings.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from lmc_runtime import Computer, Timeouts

from ..conftest import Result, run

#: Bounds a cell that must finish at once: only a hang comes near it.
HANG = 20.0

needs_zsh = pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def ends_once(result: Result) -> None:
    """Exactly one final ``active_line`` null, and it is the last message."""
    nulls = [
        i for i, m in enumerate(result.messages) if m.format == "active_line" and m.content is None
    ]
    assert nulls == [len(result.messages) - 1], result.messages


@pytest.fixture
def shells() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=1.0)) as c:
        yield c


SHELLS = ["bash", "sh", pytest.param("zsh", marks=needs_zsh)]


@pytest.mark.parametrize("shell", SHELLS)
def test_setting_ps1_never_hangs_the_shell(shells: Computer, shell: str) -> None:
    assert run(shells, "kept=yes", shell, timeout=HANG).status == "ok"
    changed = run(shells, 'PS1="$ "\nPS2="> "\nPROMPT="%% "\necho done', shell, timeout=HANG)
    ends_once(changed)
    # bash and zsh take the new prompt and still end the cell; sh refuses it.
    assert changed.status in ("ok", "error"), changed.messages
    after = run(shells, "echo $kept; (exit 3)", shell, timeout=HANG)
    assert after.output == "yes\n"
    assert after.status == "error" and after.final.extras["exit_code"] == 3


def test_replacing_prompt_command_is_refused_not_a_hang(shells: Computer) -> None:
    result = run(shells, 'PROMPT_COMMAND="PS1=zz"; echo unreached', "bash", timeout=HANG)
    ends_once(result)
    assert result.status == "error"
    assert "unreached" not in result.output
    assert "PROMPT_COMMAND: readonly variable" in result.output
    assert run(shells, "echo fine", "bash", timeout=HANG).output == "fine\n"


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_virtualenv_activate_works_and_keeps_the_prompt(
    shells: Computer, shell: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    env = tmp_path_factory.mktemp("venv") / "env"
    (env / "bin").mkdir(parents=True)
    # What a virtualenv's activate does to the prompt, without building one.
    (env / "bin" / "activate").write_text(
        f'VIRTUAL_ENV="{env}"\nexport VIRTUAL_ENV\n'
        'if [ -z "${VIRTUAL_ENV_DISABLE_PROMPT-}" ]; then PS1="(env) ${PS1-}"; export PS1; fi\n'
    )
    result = run(shells, f". {env}/bin/activate\necho $VIRTUAL_ENV", shell, timeout=HANG)
    assert result.status == "ok", result.messages
    assert result.output == f"{env}\n"


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_stty_echo_does_not_echo_the_runtime_command_line(shells: Computer, shell: str) -> None:
    assert run(shells, "stty echo </dev/tty", shell, timeout=HANG).status == "ok"
    after = run(shells, "echo clean", shell, timeout=HANG)
    assert after.output == "clean\n", after.output
    assert "__lmc" not in after.output and "cell-" not in after.output


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("# only a comment\n", "ok"),
        ("printf 'a\\0b\\n'", "ok"),
        ("printf '\\xff\\xfe\\n'", "ok"),
        ("false", "error"),
        ("set -e\nfalse\necho unreached", "restarted"),
        ("exec true", "restarted"),
    ],
)
def test_bash_odd_cells_end_once_with_an_accurate_status(
    shells: Computer, code: str, status: str
) -> None:
    result = run(shells, code, "bash", timeout=HANG)
    ends_once(result)
    assert result.status == status, result.messages
    assert "unreached" not in result.output
    assert run(shells, "echo alive", "bash", timeout=HANG).output == "alive\n"


def test_bash_user_traps_do_not_break_the_runtime(shells: Computer) -> None:
    run(shells, "trap 'echo mine' INT\ntrap 'true' DEBUG", "bash", timeout=HANG)
    stopped = run(shells, "sleep 30", "bash", timeout=1.0)
    ends_once(stopped)
    assert stopped.status == "timeout"
    assert run(shells, "trap - INT DEBUG; echo ok", "bash", timeout=HANG).output == "ok\n"


@pytest.fixture
def node() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=1.0)) as c:
        yield c


@needs_node
@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("// only a comment", "ok"),
        ("function deep() { return deep() }\ndeep()", "error"),
        ("Promise.reject(new Error('nope'))", "error"),
        ("syntax error here(", "error"),
        ("process.stdout.write('\\u0000\\uFFFD\\n')", "ok"),
    ],
)
def test_node_odd_cells_end_once_and_keep_the_session(
    node: Computer, code: str, status: str
) -> None:
    run(node, "var kept = 41", "javascript", timeout=HANG)
    result = run(node, code, "javascript", timeout=HANG)
    ends_once(result)
    assert result.status == status, result.messages
    assert run(node, "kept + 1", "javascript", timeout=HANG).output == "42\n"
