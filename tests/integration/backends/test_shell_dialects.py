"""sh and zsh by name, every alias, and a clear reason when a shell is missing."""

from __future__ import annotations

import shutil

import pytest

from lmc_runtime import Computer
from lmc_runtime.backends.shell import ZshBackend
from lmc_runtime.backends.shell.dialect import ZshDialect

from ..conftest import run

needs_zsh = pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")


@pytest.mark.parametrize("alias", ["shell", "bash", "BASH", "sh"])
def test_aliases_run(alias: str) -> None:
    with Computer() as c:
        assert run(c, "echo hi", alias).output == "hi\n"


def test_sh_keeps_cwd_and_functions_and_reports_the_exit_code() -> None:
    with Computer() as c:
        run(c, 'cd /\nx=5\nf() { echo "f:$1"; }', "sh")
        result = run(c, "pwd\necho $x\nf a\nfalse", "sh")
        assert result.output == "/\n5\nf:a\n"
        assert result.final.extras is not None and result.final.extras["exit_code"] == 1


def test_sh_heredoc_and_read_eof() -> None:
    with Computer() as c:
        code = "cat <<EOF\na # $((1+1))\nEOF\nread y || echo eof"
        assert run(c, code, "sh").output == "a # 2\neof\n"


@needs_zsh
def test_zsh_keeps_arrays_and_aliases_and_reports_the_exit_code() -> None:
    with Computer() as c:
        run(c, "cd /tmp\ntypeset -a arr=(p q)\nalias hey='echo HEY'\nz=1", "zsh")
        result = run(c, "pwd\necho ${arr[2]} $z\nhey", "zsh")
        assert result.output == "/tmp\nq 1\nHEY\n"
        exited = run(c, "exit 4", "zsh")
        assert exited.status == "restarted"
        assert exited.final.extras is not None and exited.final.extras["exit_code"] == 4


def test_a_missing_shell_is_reported_not_crashed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ZshDialect, "find", lambda self: None)
    availability = ZshBackend().availability()
    assert not availability.available
    assert availability.reason is not None and "zsh is not installed" in availability.reason
    with Computer() as c:
        reply = run(c, "echo hi", "zsh")
        assert reply.final.extras is not None and reply.final.extras["status"] == "unavailable"
        assert "zsh is not installed" in reply.output
