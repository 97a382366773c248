"""Cutting a cell of Java into the chunks jshell must see whole."""

from __future__ import annotations

import pytest

from lmc_runtime.backends.java.cells import Plan, plan_cell


def _firsts(plan: Plan) -> list[int]:
    return [chunk.first for chunk in plan.chunks]


def test_one_statement_a_line_is_one_chunk_a_line() -> None:
    plan = plan_cell("int a = 1;\nSystem.out.println(a);")
    assert plan.problem is None
    assert _firsts(plan) == [1, 2]
    assert [chunk.text for chunk in plan.chunks] == ["int a = 1;", "System.out.println(a);"]


def test_a_chain_whose_lines_start_with_a_dot_is_one_chunk() -> None:
    code = 'String s = List.of("a")\n    .stream()\n    .collect(joining(","));\nprint(s);'
    plan = plan_cell(code)
    assert _firsts(plan) == [1, 4]
    assert plan.chunks[0].source == tuple(code.split("\n")[:3])
    assert plan.chunks[0].text == (
        'String s = List.of("a")/*\n*/    .stream()/*\n*/    .collect(joining(","));'
    )


@pytest.mark.parametrize(
    "code",
    [
        "if (x) {\n  a();\n}\nelse {\n  b();\n}",
        "try {\n  a();\n}\ncatch (Exception e) {\n}\nfinally {\n}",
        "void f()\n{\n  a();\n}",
        "int total = 1 +\n  2 +\n  3;",
        "int total = 1\n  + 2;",
        "do {\n  x++;\n}\nwhile (x < 3);",
        "for (int i = 0; i < 3; i++)\n  a(i);",
        '@Override\npublic String toString() { return ""; }',
        "call(1,\n     2);",
    ],
)
def test_a_statement_over_several_lines_is_one_chunk(code: str) -> None:
    plan = plan_cell(code)
    assert plan.problem is None
    assert len(plan.chunks) == 1, plan
    assert plan.chunks[0].source == tuple(code.split("\n"))


def test_every_line_but_the_last_opens_a_comment_the_next_closes() -> None:
    chunk = plan_cell("if (x) {\n  a(); // note\n}").chunks[0]
    assert chunk.typed == ("if (x) {/*", "*/  a(); /*// note", "*/}")


def test_a_trailing_comment_that_closes_a_block_comment_is_dropped() -> None:
    chunk = plan_cell("if (x) { // a */ b\n}").chunks[0]
    assert chunk.typed == ("if (x) { /*", "*/}")


def test_a_last_line_without_semicolon_gets_one_before_its_comment() -> None:
    assert plan_cell("int x = 1 // one").chunks[0].text == "int x = 1 ;// one"
    assert plan_cell("x").chunks[0].text == "x;"
    assert plan_cell("class A {}").chunks[0].text == "class A {}"


def test_a_do_or_try_that_is_not_finished_gets_a_semicolon_so_jshell_never_waits() -> None:
    assert plan_cell("do {\n}").chunks[0].text.endswith("};")
    assert plan_cell("try {\n}").chunks[0].text.endswith("};")
    assert plan_cell("try {\n} catch (Exception e) {}").chunks[0].text.endswith("{}")


def test_blank_and_comment_lines_between_statements_are_not_typed() -> None:
    plan = plan_cell("// start\n\nint a = 1;\n/* two\n lines */\n\nint b = 2;\n// end")
    assert _firsts(plan) == [3, 7]


def test_a_text_block_keeps_its_lines_untouched() -> None:
    code = 'String t = """\n  a /* not a comment\n  b""";\nprint(t);'
    plan = plan_cell(code)
    assert _firsts(plan) == [1, 4]
    assert plan.chunks[0].text == 'String t = """\n  a /* not a comment\n  b""";'


def test_braces_in_strings_chars_and_comments_do_not_count() -> None:
    plan = plan_cell("String s = \"{(\"; char c = '}'; // {\nint b = 2;")
    assert _firsts(plan) == [1, 2]


def test_an_unterminated_string_ends_its_chunk_so_jshell_reports_it() -> None:
    plan = plan_cell('String u = "abc\nint q = 1;')
    assert _firsts(plan) == [1, 2]


def test_a_cell_that_ends_inside_a_brace_names_the_line_of_that_brace() -> None:
    plan = plan_cell("int a = 1;\nvoid f() {\n  a();\n")
    assert plan.chunks == ()
    assert plan.problem == (2, "reached end of input while parsing: this '{' is never closed")


@pytest.mark.parametrize(
    "code", ["int a = 1;\n/* open", "int a = 1; /* open", 'String t = """\n  a']
)
def test_a_cell_that_ends_inside_a_comment_or_text_block_cannot_run(code: str) -> None:
    plan = plan_cell(code)
    assert plan.chunks == ()
    assert plan.problem is not None and "never closed" in plan.problem[1]


def test_jshell_commands_are_refused() -> None:
    plan = plan_cell("/vars")
    assert plan.problem is not None and plan.problem[0] == 1


@pytest.mark.parametrize("code", ["", "\n\n  \n", "// only a comment", "/* a\n b */"])
def test_a_cell_without_code_has_no_chunks(code: str) -> None:
    assert plan_cell(code) == Plan()


def test_control_characters_become_unicode_escapes_and_crlf_becomes_lf() -> None:
    chunk = plan_cell('String s = "a\x03b";\r\nint b = 2;').chunks[0]
    assert chunk.text == 'String s = "a\\u0003b";'
