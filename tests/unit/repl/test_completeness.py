"""When Enter runs the input, per language, and the indentation of the next line."""

from __future__ import annotations

import pytest

from lmc_runtime.repl.completeness import indent_after, is_complete


@pytest.mark.parametrize(
    "text",
    [
        "x = 1",
        "print(1)",
        "a = [\n1,\n2]",
        "x=1\ny=2",  # a pasted block of simple statements
        "def f(:",  # a syntax error is for the interpreter to report
        "for i in range(2):\n    print(i)\n",  # blank last line ends the block
        "if x:\n    pass\n    ",  # a line of indentation only is blank too
        "",
        "   ",
    ],
)
def test_python_complete(text: str) -> None:
    assert is_complete("python", text)


@pytest.mark.parametrize(
    "text",
    [
        "if x:",
        "for i in range(3):\n    print(i)",  # still inside the block: else/elif may follow
        "x = (1,",
        '"""abc',
        "@decorator",
        "x = 1 + \\",
        "x=1\nif x:\n    pass\nelse:",
    ],
)
def test_python_incomplete(text: str) -> None:
    assert not is_complete("python", text)


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("shell", "echo hi"),
        ("shell", "if true; then echo a; fi"),
        ("shell", "for i in 1 2; do\n  echo $i\ndone"),
        ("shell", "echo ${#PATH}"),  # '#' inside ${...} is no comment
        ("shell", "echo 'it''s' # don't count this quote"),
        ("shell", "case x in\n  x) echo x;;\nesac"),  # a lone ')' closes nothing
        ("shell", "cat <<EOF\nhello\nEOF"),
        ("javascript", "function f(x) {\n  return x // }\n}"),
        ("javascript", "const s = `a ${1} b`;"),
        ("javascript", "/* { */ let a = 1"),
        ("r", "x <- c(1, 2,\n3)"),
        ("r", "f <- function(x) {\n  x + 1\n}"),
        ("html", "<div>"),
        ("unknown-language", "anything (goes\n"),
    ],
)
def test_generic_complete(language: str, text: str) -> None:
    assert is_complete(language, text)


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("shell", "if true; then"),
        ("shell", "for i in 1 2; do"),
        ("shell", "echo 'unterminated"),
        ("shell", "echo a \\"),
        ("shell", "ls |"),
        ("shell", "cat <<EOF\nhello"),
        ("shell", "f() {\n  echo a"),
        ("javascript", "function f(x) {"),
        ("javascript", "const s = `open"),
        ("javascript", "/* open comment"),
        ("r", "x <- 1 +"),
        ("r", "f <- function(x) {"),
        ("unknown-language", "call(1,"),
    ],
)
def test_generic_incomplete(language: str, text: str) -> None:
    assert not is_complete(language, text)


def test_a_blank_line_always_ends_the_input_even_when_the_rule_says_open() -> None:
    assert not is_complete("shell", "echo if")  # 'if' looks like an open block
    assert is_complete("shell", "echo if\n")
    assert is_complete("javascript", "let a = (\n   ")


@pytest.mark.parametrize(
    ("language", "before", "indent"),
    [
        ("python", "if x:", "    "),
        ("python", "    y = [", "        "),
        ("python", "    y = 1", "    "),
        ("javascript", "function f() {", "    "),
        ("shell", "  echo a", "  "),
        ("shell", "for i in 1 2; do", "    "),
        ("shell", "if true;then", "    "),
        ("shell", "echo undo", ""),
        ("html", "<div>", ""),
    ],
)
def test_indent_after(language: str, before: str, indent: str) -> None:
    assert indent_after(language, before) == indent


@pytest.mark.parametrize("language", ["python", "shell", "javascript", "r"])
def test_raw_messages_and_commands_are_one_line_in_every_language(language: str) -> None:
    assert is_complete(language, '{"role": "assistant", "content": "open(" ')
    assert is_complete(language, "{not json")  # sent, to be reported as not JSON
    assert is_complete(language, "%save out.jsonl")


def test_a_cell_magic_goes_on_until_a_blank_line() -> None:
    assert not is_complete("python", "%%time")
    assert not is_complete("python", "%%time\nx = 1")
    assert is_complete("python", "%%time\nx = 1\n")
