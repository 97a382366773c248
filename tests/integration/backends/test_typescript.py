"""TypeScript on the node runner: transpiled, not type-checked, lines of the TS cell."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends.registry import Registry
from tests.integration.conftest import Result, assert_lines, run

_STATUS = Registry().availability("typescript")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not _STATUS.available, reason=f"no TypeScript: {_STATUS.reason}"),
]

PAUSE = "await new Promise<void>((r) => setTimeout(r, 60))"


@pytest.fixture
def ts() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c


def ts_run(computer: Computer, code: str, language: str = "typescript") -> Result:
    return run(computer, code, language, timeout=30)


def cell_lines(output: str) -> list[int]:
    """The line of every ``<cell N>:LINE:COLUMN`` frame in ``output``."""
    return [int(line) for line in re.findall(r"<cell \d+>:(\d+):\d+", output)]


def test_state_persists_across_runs(ts: Computer) -> None:
    first = ts_run(
        ts,
        "let count: number = 40\n"
        "const names: string[] = ['a']\n"
        "class Counter {\n"
        "  private n: number = 0\n"
        "  inc(): number { return ++this.n }\n"
        "}\n"
        "function add(a: number, b: number): number { return a + b }",
    )
    assert first.status == "ok", first.output
    assert ts_run(ts, "count = add(count, 2)\ncount").output == "42\n"
    assert ts_run(ts, "const c = new Counter(); c.inc(); c.inc()").output == "2\n"
    assert ts_run(ts, "names.length", "ts").output == "1\n"


def test_types_declared_in_one_run_are_used_in_the_next(ts: Computer) -> None:
    assert (
        ts_run(ts, "interface User { name: string; age?: number }\ntype Id = number").status == "ok"
    )
    result = ts_run(
        ts, "const user: User = { name: 'ada' }\nconst id: Id = 7\nuser.name + ' ' + id"
    )
    assert result.status == "ok", result.output
    assert result.output == "'ada 7'\n"


def test_a_type_error_does_not_block_running(ts: Computer) -> None:
    result = ts_run(ts, "const notANumber: number = 'text'\nnotANumber.toUpperCase()")
    assert result.status == "ok"
    assert result.output == "'TEXT'\n"


def test_typescript_features_run(ts: Computer) -> None:
    result = ts_run(
        ts,
        "enum Color { Red, Green = 5 }\n"
        "class Box<T> {\n"
        "  constructor(private readonly value: T, public label = 'box') {}\n"
        "  get(): T { return this.value }\n"
        "}\n"
        "const box = new Box<number>(Color.Green)\n"
        "const loose = { nested: undefined } as { nested?: { deep: string } }\n"
        "const fetched = await new Promise<string>((r) => setTimeout(() => r('late'), 10));\n"
        "[box.get(), box.label, Color[5], loose.nested?.deep ?? 'none', fetched]",
    )
    assert result.status == "ok", result.output
    assert result.output == "[ 5, 'box', 'Green', 'none', 'late' ]\n"
    assert ts_run(ts, "[Color.Red, fetched]").output == "[ 0, 'late' ]\n"


def test_a_runtime_error_names_the_typescript_line(ts: Computer) -> None:
    code = (
        "interface Shape { sides: number }\n"  # 1
        "type Named<T> = T & { name: string }\n"  # 2
        "const square: Named<Shape> = { sides: 4, name: 'square' }\n"  # 3
        "function check(shape: Shape): void {\n"  # 4
        "  throw new Error(`bad shape ${shape.sides}`)\n"  # 5
        "}\n"  # 6
        "check(square as Shape)\n"  # 7
    )
    result = ts_run(ts, code)
    assert result.status == "error"
    assert "Uncaught Error: bad shape 4" in result.output
    assert cell_lines(result.output) == [5, 7]
    assert "at check (<cell" in result.output


def test_stacks_read_inside_the_code_name_typescript_lines_too(ts: Computer) -> None:
    code = (
        "interface Result { line?: string }\n"
        "\n"
        "const result: Result = {}\n"
        "try { (null as any).boom } catch (e) { result.line = (e as Error).stack }\n"
        "result.line"
    )
    assert cell_lines(ts_run(ts, code).output) == [4]


def test_a_function_of_an_earlier_run_fails_on_its_own_line(ts: Computer) -> None:
    ts_run(
        ts,
        "type Reason = string\n\nfunction fail(why: Reason): never {\n  throw new TypeError(why)\n}",
    )
    result = ts_run(ts, "const why: string = 'later'\nfail(why)")
    assert result.status == "error"
    assert "TypeError: later" in result.output
    assert cell_lines(result.output) == [4, 2]


def test_active_lines_are_the_typescript_lines(ts: Computer) -> None:
    code = (
        "interface Pause { ms: number }\n"  # 1: erased
        "const pause: Pause = { ms: 60 }\n"  # 2
        f"{PAUSE}\n"  # 3
        "type Total = number\n"  # 4: erased
        "\n"  # 5
        "let total: Total = pause.ms\n"  # 6
        f"{PAUSE}\n"  # 7
        "total"  # 8
    )
    result = ts_run(ts, code)
    assert result.status == "ok", result.output
    assert_lines(result.lines, [2, 3, 6, 7, 8])
    assert result.output == "60\n"


def test_a_syntax_error_runs_nothing_and_names_its_line(ts: Computer) -> None:
    result = ts_run(ts, "globalThis.tsRanBefore = true\nconst broken: number = ;")
    assert result.status == "error"
    assert "SyntaxError: Expression expected." in result.output
    assert result.output.startswith("Uncaught <cell") and ">:2\n" in result.output
    assert "const broken: number = ;" in result.output
    assert ts_run(ts, "typeof tsRanBefore").output == "'undefined'\n"


def test_imports_persist_and_type_imports_vanish(ts: Computer) -> None:
    first = ts_run(
        ts,
        "import { join } from 'path'\n"
        "import type { Stats } from 'fs'\n"
        "import fs = require('fs')\n"
        "import * as os from 'os'",
    )
    assert first.status == "ok", first.output
    result = ts_run(
        ts, "let stats: Stats | undefined\n[join('a', 'b'), typeof fs.statSync, typeof os.cpus]"
    )
    assert result.output == "[ 'a/b', 'function', 'function' ]\n"


def test_an_unknown_module_is_an_error_naming_the_typescript_line(ts: Computer) -> None:
    result = ts_run(
        ts,
        "interface Unused { a: number }\n\ntype Also = string\nimport missing from 'no-such-module-xyz'",
    )
    assert result.status == "error"
    assert "Cannot find module 'no-such-module-xyz'" in result.output
    assert cell_lines(result.output) == [4]


def test_restart_loses_typescript_state_and_keeps_working(ts: Computer) -> None:
    assert ts_run(ts, "const beforeRestart: number = 1").status == "ok"
    ts.restart("typescript")
    result = ts_run(ts, "typeof beforeRestart")
    assert result.output == "'undefined'\n"
    assert ts_run(ts, "const beforeRestart: number = 2\nbeforeRestart").output == "2\n"


def test_a_busy_loop_is_stopped_by_a_timeout_at_its_typescript_line() -> None:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        assert ts_run(c, "const kept: string = 'yes'").status == "ok"
        code = (
            "interface Spin { n: number }\nconst spin: Spin = { n: 0 }\nwhile (true) { spin.n++ }"
        )
        result = run(c, code, "typescript", timeout=1)
        assert result.status == "timeout"
        assert (result.final.extras or {}).get("state_lost") is False
        assert "at line 3" in result.output
        assert ts_run(c, "kept + ' ' + (spin.n > 0)").output == "'yes true'\n"
