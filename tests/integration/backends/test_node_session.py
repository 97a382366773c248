"""JavaScript on real node: state, top-level await, output, errors, active lines."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from lmc_runtime import Computer, Timeouts
from tests.integration.conftest import Result, assert_lines, run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


@pytest.fixture
def js() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c


def js_run(computer: Computer, code: str, **kwargs: object) -> Result:
    return run(computer, code, "javascript", timeout=30, **kwargs)  # type: ignore[arg-type]


def test_const_in_one_execution_is_visible_in_the_next(js: Computer) -> None:
    assert js_run(js, "const a = 1").status == "ok"
    result = js_run(js, "a + 1")
    assert result.output == "2\n"
    assert result.status == "ok"


def test_let_functions_and_classes_persist(js: Computer) -> None:
    js_run(
        js,
        "let counter = 10\nfunction bump(n) { return counter += n }\nclass Box { v() { return 'boxed' } }",
    )
    assert js_run(js, "bump(5)").output == "15\n"
    assert js_run(js, "new Box().v() + ' ' + counter").output == "'boxed 15'\n"


def test_aliases_reach_the_same_session(js: Computer) -> None:
    js_run(js, "globalThis.shared = 41")
    assert run(js, "shared + 1", "js", timeout=30).output == "42\n"
    assert run(js, "shared + 2", "node", timeout=30).output == "43\n"


def test_top_level_await_and_its_declarations(js: Computer) -> None:
    result = js_run(js, "const v = await new Promise(r => setTimeout(() => r(7), 20))\nv * 6")
    assert result.output == "42\n"
    assert js_run(js, "v").output == "7\n"


def test_hoisted_function_called_before_its_declaration(js: Computer) -> None:
    result = js_run(js, "console.log(early())\nfunction early() { return 'hoisted' }")
    assert result.output == "hoisted\n"


def test_uncaught_exception_comes_back_as_its_stack(js: Computer) -> None:
    result = js_run(js, "let fine = 1\nfunction boom() { throw new Error('kaboom') }\nboom()")
    assert result.status == "error"
    assert "Uncaught Error: kaboom" in result.output
    assert "at boom (<cell" in result.output
    assert "runner.js" not in result.output
    assert js_run(js, "fine").output == "1\n"


def test_rejected_promise_comes_back_as_its_stack(js: Computer) -> None:
    result = js_run(js, "await Promise.reject(new TypeError('nope'))")
    assert result.status == "error"
    assert "TypeError: nope" in result.output
    unhandled = js_run(js, "Promise.reject(new RangeError('loose')); 'after'")
    assert "RangeError: loose" in unhandled.output
    assert js_run(js, "1 + 1").output == "2\n"


def test_error_in_a_timer_callback_is_reported(js: Computer) -> None:
    result = js_run(
        js,
        "setTimeout(() => { throw new Error('in timer') }, 5)\nawait new Promise(r => setTimeout(r, 100))",
    )
    assert "Error: in timer" in result.output
    assert result.status == "error"


def test_syntax_error_runs_nothing(js: Computer) -> None:
    result = js_run(js, "globalThis.ranBefore = true\nconst broken = ;")
    assert result.status == "error"
    assert "SyntaxError" in result.output
    assert js_run(js, "typeof ranBefore").output == "'undefined'\n"


def test_active_line_for_each_top_level_statement(js: Computer) -> None:
    pause = "await new Promise(r => setTimeout(r, 60))"
    code = f"let q = 0\n{pause}\n\nq += 1\n{pause}\nq"
    result = js_run(js, code)
    assert_lines(result.lines, [1, 2, 4, 5, 6])
    assert result.output == "1\n"


def test_active_lines_are_rate_limited(js: Computer) -> None:
    code = "let many = 0\n" + "many += 1\n" * 2000 + "many"
    result = js_run(js, code)
    assert result.output == "2000\n"
    assert 2 <= len(result.lines) < 200


def test_active_line_never_enters_string_literals_or_output(js: Computer) -> None:
    code = "const text = `line one\nline two`\nawait new Promise(r => setTimeout(r, 60))\nconsole.log(text)"
    result = js_run(js, code)
    assert result.output == "line one\nline two\n"
    assert_lines(result.lines, [1, 3, 4])


def test_runtime_fifos_are_not_inherited_by_child_processes(js: Computer) -> None:
    result = js_run(
        js, "require('child_process').execSync('ls /proc/self/fd', { encoding: 'utf8' })"
    )
    fds = sorted(
        int(n) for n in result.output.strip().strip("'").split("\\n") if n.strip().isdigit()
    )
    # stdin, stdout, stderr and the descriptor ls itself opened to list the folder.
    assert fds == [0, 1, 2, 3]
