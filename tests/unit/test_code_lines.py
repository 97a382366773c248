"""benchmarks.code_lines: what counts as a code line of a package."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.code_lines import code_lines, count_tree, main

SOURCE = '''"""A module docstring
on two lines."""

# a comment

import os  # a trailing comment


class Box:
    """A class docstring."""

    size = (
        1,
        2,
    )

    def open(self) -> str:
        """A function docstring."""
        return """not a docstring
        but a string on two lines"""
'''


def test_blank_comment_and_docstring_lines_do_not_count() -> None:
    """Guards the measure: only lines holding code count, a multi-line value each line."""
    # import, class, size = (, 1, 2, ), def, return (2 lines)
    assert code_lines(SOURCE) == 9


def test_a_tree_counts_every_module(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text('"""Only a docstring."""\n')
    (tmp_path / "pkg" / "sub" / "mod.py").write_text(SOURCE)
    (tmp_path / "pkg" / "notes.txt").write_text("x = 1\n")
    count = count_tree(tmp_path / "pkg")
    assert (count.modules, count.code_lines) == (2, 9)


def test_the_command_prints_one_json_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    assert main([str(tmp_path), "--json"]) == 0
    out = capsys.readouterr().out
    assert out == f'{{"root": "{tmp_path}", "modules": 1, "code_lines": 1}}\n'
