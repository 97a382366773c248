"""What each shell is told: argv, init scripts, and the one line typed per cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime.backends.shell.dialect import BashDialect, Dialect, ShDialect, ZshDialect
from lmc_runtime.backends.shell.protocol import marker_prefix


@pytest.mark.parametrize("dialect", [BashDialect(), ShDialect(), ZshDialect()])
def test_run_line_is_one_line_that_quotes_its_paths(dialect: Dialect) -> None:
    cell = Path("/tmp/it's here/cell-3.sh")
    line = dialect.run_line(3, cell, "/dev/null", track=True)
    assert line.endswith("\n") and line.count("\n") == 1
    assert "'/tmp/it'\"'\"'s here/cell-3.sh'" in line
    assert "</dev/null" in line


@pytest.mark.parametrize("dialect", [BashDialect(), ShDialect(), ZshDialect()])
def test_init_sets_the_marker_prompt_and_an_empty_continuation(dialect: Dialect) -> None:
    script = dialect.init_script("abc123", 17)
    assert marker_prefix("abc123").decode() in script
    assert "PS2=''" in script


def test_bash_reports_lines_to_the_side_channel_only_when_tracking() -> None:
    bash = BashDialect()
    assert ">&17" in bash.init_script("t", 17)
    assert "trap - DEBUG" in bash.run_line(1, Path("/c.sh"), "/dev/null", track=False)
    tracked = bash.run_line(1, Path("/c.sh"), "/dev/null", track=True)
    assert "__lmc_f=/c.sh" in tracked and 'trap "$__lmc_trap" DEBUG' in tracked


def test_bash_and_zsh_start_without_rc_files_or_line_editing() -> None:
    assert BashDialect().argv("/bin/bash") == [
        "/bin/bash",
        "--noprofile",
        "--norc",
        "--noediting",
        "-i",
    ]
    assert ZshDialect().argv("/bin/zsh") == ["/bin/zsh", "-f", "+Z", "-i"]


def test_missing_reason_names_the_package() -> None:
    assert "apt-get install zsh" in ZshDialect().missing_reason()


def test_sh_prompt_variables_are_read_only_so_code_cannot_hide_the_marker() -> None:
    assert "readonly PS1 PS2" in ShDialect().init_script("t", 17)


def test_bash_rebuilds_the_marker_prompt_before_every_prompt() -> None:
    script = BashDialect().init_script("abc123", 17)
    assert "PROMPT_COMMAND=__lmc_prompt\nreadonly PROMPT_COMMAND\n" in script
    assert marker_prefix("abc123").decode() in script and "__lmc_s=$?" in script


def test_zsh_rearms_its_prompt_hook_with_every_cell() -> None:
    zsh = ZshDialect()
    assert "precmd_functions=(__lmc_prompt)" in zsh.init_script("t", 17)
    assert "precmd_functions=(__lmc_prompt)" in zsh.run_line(1, Path("/c.zsh"), "/dev/null", True)
