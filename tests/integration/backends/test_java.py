"""Java on a real JVM (the JShell API): state, output, errors with their line, stops,
deaths, input."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends.java import JavaBackend
from tests.integration.conftest import Result, run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not JavaBackend().availability().available,
        reason=str(JavaBackend().availability().reason),
    ),
]


@pytest.fixture(scope="module")
def java() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=3.0)) as c:
        yield c


@pytest.fixture
def fresh() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=3.0)) as c:
        yield c


def java_run(computer: Computer, code: str, **kwargs: object) -> Result:
    kwargs.setdefault("timeout", 60)
    return run(computer, code, "java", **kwargs)


def stderr(result: Result) -> str:
    return "".join(
        str(m.content)
        for m in result.of("console", "output")
        if (m.extras or {}).get("stream") == "stderr"
    )


def test_variables_methods_classes_and_imports_persist(java: Computer) -> None:
    code = (
        "import java.time.Duration;\n"
        "int base = 40;\n"
        "int twice(int n) { return 2 * n; }\n"
        "record Point(int x, int y) {}"
    )
    assert java_run(java, code).status == "ok"
    result = java_run(java, "System.out.println(twice(base) + new Point(1, 1).x());")
    assert (result.status, result.output) == ("ok", "81\n")
    assert java_run(java, "System.out.println(Duration.ofSeconds(60).toMinutes());").output == "1\n"


def test_stdout_and_stderr_keep_their_order_and_stderr_is_marked(java: Computer) -> None:
    code = (
        'System.out.println("o1");\n'
        "for (int i = 0; i < 2; i++) {\n"
        '  System.err.println("e" + i);\n'
        '  System.out.println("o" + (i + 2));\n'
        "}"
    )
    result = java_run(java, code)
    assert result.status == "ok"
    assert result.output == "o1\ne0\no2\ne1\no3\n"
    assert stderr(result) == "e0\ne1\n"


MULTI_LINE = (
    'String joined = java.util.List.of("a", "b").stream()\n'
    "    .map(s -> s.toUpperCase())\n"
    '    .collect(java.util.stream.Collectors.joining(","));\n'
    "if (joined.isEmpty()) {\n"
    '  System.out.println("empty");\n'
    "}\n"
    "else {\n"
    "  System.out.println(joined);\n"
    "}"
)
#: Regression: the old PTY backend cut cells with line heuristics; JShell's own
#: parser knows where a snippet ends, whatever strings, comments and layout hold.
TRICKY = (
    'String tricky = "a; /* not a comment */ } {" + // a comment\n'
    '    "b";\n'
    "int sum = 0; for (int i = 0; i < 3; i++) sum += i;\n"
    'System.out.println(tricky + " " + sum)'
)


@pytest.mark.parametrize(
    ("code", "output"),
    [(MULTI_LINE, "A,B\n"), (TRICKY, "a; /* not a comment */ } {b 3\n")],
    ids=["multi-line", "tricky"],
)
def test_a_cell_is_cut_into_whole_statements_by_javas_parser(
    java: Computer, code: str, output: str
) -> None:
    result = java_run(java, code)
    assert (result.status, result.output) == ("ok", output)


def test_a_compile_error_names_its_line_and_stops_the_run(java: Computer) -> None:
    result = java_run(
        java, 'System.out.println("before");\nint wrong = "text";\nSystem.out.println("after");'
    )
    assert result.status == "error"
    assert result.output.startswith("before\n")
    assert "after" not in result.output
    assert "Error at line 2:" in stderr(result)
    assert 'int wrong = "text";' in stderr(result)
    assert "incompatible types" in stderr(result)


def test_an_exception_names_its_line_and_the_line_of_the_method(java: Computer) -> None:
    assert (
        java_run(
            java, 'void explode() {\n  int x = 1;\n  throw new IllegalStateException("boom");\n}'
        ).status
        == "ok"
    )
    result = java_run(java, 'System.out.println("start");\n\nexplode();')
    assert result.status == "error"
    text = stderr(result)
    assert "Exception java.lang.IllegalStateException: boom" in text
    assert "at explode (line 3 of an earlier run)" in text
    assert "at (line 3)" in text


def test_a_cell_that_ends_mid_statement_runs_nothing(java: Computer) -> None:
    result = java_run(java, 'System.out.println("not run");\nvoid broken() {\n  int x = 1;')
    assert result.status == "error"
    assert "not run" not in result.output
    assert "Error at line 2:" in stderr(result)


def test_the_running_line_is_reported(java: Computer) -> None:
    result = java_run(
        java, 'System.out.println("a");\nThread.sleep(400);\nSystem.out.println("b");'
    )
    assert result.status == "ok"
    assert 2 in result.lines
    assert result.lines[-1] is None


#: 20,000 lines, every thousandth on stderr.
FLOOD = (
    "for (int i = 0; i < 20000; i++) {\n"
    '  (i % 1000 == 999 ? System.err : System.out).println("line " + i);\n'
    "}"
)


def test_a_flood_of_output_arrives_whole_and_in_order(java: Computer) -> None:
    """The runner joins and batches output under load; nothing is lost or reordered."""
    result = java_run(java, FLOOD)
    assert result.status == "ok"
    assert result.output == "".join(f"line {i}\n" for i in range(20000))
    assert stderr(result) == "".join(f"line {i}\n" for i in range(999, 20000, 1000))


def test_unicode_goes_both_ways(java: Computer) -> None:
    result = java_run(
        java, 'String größe = "héllo ☃ 日本";\nSystem.out.println(größe + " " + größe.length());'
    )
    assert (result.status, result.output) == ("ok", "héllo ☃ 日本 10\n")


def test_a_timeout_interrupts_a_busy_loop_and_keeps_the_state(fresh: Computer) -> None:
    assert java_run(fresh, 'String kept = "still";').status == "ok"
    result = java_run(fresh, 'System.out.println("started");\nwhile (true) {}', timeout=2)
    assert result.status == "timeout"
    assert result.final.extras is not None and result.final.extras["state_lost"] is False
    after = java_run(fresh, "System.out.println(kept);")
    assert (after.status, after.output) == ("ok", "still\n")


def test_system_exit_restarts_jshell(fresh: Computer) -> None:
    assert java_run(fresh, 'String kept = "gone";').status == "ok"
    result = java_run(fresh, 'System.out.println("bye");\nSystem.exit(3);')
    assert result.status == "restarted"
    assert result.output.startswith("bye\n")  # what was queued is written before the exit
    assert "System.exit(3)" in result.output
    after = java_run(fresh, 'System.out.println("back");')
    assert (after.status, after.output) == ("ok", "back\n")
    assert java_run(fresh, "System.out.println(kept);").status == "error"


def test_a_killed_jvm_is_reported_and_restarted(fresh: Computer) -> None:
    kill = (
        'new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid()))'
        ".start().waitFor();"
    )
    result = java_run(fresh, kill)
    assert result.status == "kernel_died"
    assert "SIGKILL" in result.output
    after = java_run(fresh, 'System.out.println("alive");')
    assert (after.status, after.output) == ("ok", "alive\n")


READ = (
    'System.out.print("name? ");\n'
    "String line = new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();\n"
    'System.out.println("got:[" + line + "]");'
)


def test_input_is_answered_by_the_callback_or_reads_its_end() -> None:
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return "Ada"

    with Computer(on_input=answer) as c:
        result = java_run(c, READ)
    assert (result.status, prompts) == ("ok", ["name? "])
    assert result.output.endswith("got:[Ada]\n")
    with Computer() as c:
        result = java_run(c, READ)
    assert (result.status, result.output) == ("ok", "name? got:[null]\n")


def test_an_answer_too_long_for_the_fifo_stops_the_run_and_keeps_the_state() -> None:
    with Computer(on_input=lambda prompt: "x" * 1_000_000) as c:
        assert java_run(c, 'String kept = "v";').status == "ok"
        result = java_run(c, READ, timeout=30)
        assert result.status == "interrupted"
        assert "could not be written" in result.output
        assert result.final.extras is not None and result.final.extras["state_lost"] is False
        after = java_run(c, "System.out.println(kept);")
    assert (after.status, after.output) == ("ok", "v\n")


def test_only_the_first_line_of_an_answer_is_given_and_echoed() -> None:
    with Computer(on_input=lambda prompt: "first\nsecond") as c:
        result = java_run(c, READ)
    assert (result.status, result.output) == ("ok", "name? first\ngot:[first]\n")


SHOW_ENV = 'System.out.println(System.getenv("LMC_NEW") + " " + System.getenv("LMC_OLD"));'


def test_env_applies_to_every_line_of_one_run_and_is_restored_after_it() -> None:
    with Computer(env={"LMC_OLD": "old"}) as c:
        assert java_run(c, SHOW_ENV).output == "null old\n"
        env = {"LMC_NEW": 'new "quoted" é', "LMC_OLD": "over"}
        result = java_run(c, f'System.out.println("first");\n{SHOW_ENV}', env=env)
        assert (result.status, result.output) == ("ok", 'first\nnew "quoted" é over\n')
        assert java_run(c, SHOW_ENV).output == "null old\n"
        unset = java_run(c, 'System.out.println(System.getenv().containsKey("LMC_NEW"));')
        assert unset.output == "false\n"


def test_env_is_restored_after_an_error_and_after_a_timeout(fresh: Computer) -> None:
    env = {"LMC_NEW": "set"}
    failing = f'{SHOW_ENV}\nthrow new RuntimeException("boom");'
    result = java_run(fresh, failing, env=env)
    assert (result.status, result.output.split("\n")[0]) == ("error", "set null")
    assert java_run(fresh, SHOW_ENV).output == "null null\n"
    result = java_run(fresh, f"{SHOW_ENV}\nwhile (true) {{}}", env=env, timeout=2)
    assert (result.status, result.output.split("\n")[0]) == ("timeout", "set null")
    assert java_run(fresh, SHOW_ENV).output == "null null\n"


def test_a_child_whose_process_builder_environment_is_read_sees_the_env(java: Computer) -> None:
    code = (
        'ProcessBuilder pb = new ProcessBuilder("sh", "-c", "echo child:$LMC_NEW");\n'
        'pb.environment().put("LMC_OTHER", "1");\n'
        "pb.inheritIO().start().waitFor();"
    )
    assert java_run(java, code, env={"LMC_NEW": "seen"}).output == "child:seen\n"
    assert java_run(java, code).output == "child:\n"


def test_with_env_an_error_on_the_first_line_shows_that_line_as_written(java: Computer) -> None:
    result = java_run(java, 'int wrong = "text";', env={"LMC_NEW": "set"})
    assert result.status == "error"
    assert stderr(result).split("\n")[:3] == [
        "Error at line 1:",
        "incompatible types: java.lang.String cannot be converted to int",
        'int wrong = "text";',
    ]


def test_a_jshell_command_is_refused_with_its_line(java: Computer) -> None:
    result = java_run(java, 'System.out.println("printed");\n/vars')
    assert result.status == "error"
    assert "printed" not in result.output
    assert "Error at line 2:" in stderr(result)


def test_a_method_with_a_missing_dependency_is_noted_and_fails_when_called(
    java: Computer,
) -> None:
    declared = java_run(java, "void later() { notYet(); }")
    assert declared.status == "ok"
    assert "cannot be used until method notYet() is declared" in stderr(declared)
    called = java_run(java, "later();")
    assert called.status == "error"
    assert "method notYet() is declared" in stderr(called)
    assert java_run(java, 'void notYet() { System.out.println("now"); }').status == "ok"
    assert java_run(java, "later();").output == "now\n"


def test_the_runner_is_built_once_for_each_source_with_its_class_archive() -> None:
    from lmc_runtime.backends.java import runner_source
    from lmc_runtime.java_runner import build_runner, runner_build

    said: list[str] = []
    assert build_runner(runner_source(), said.append)
    assert said == ["lmc setup: the Java runner is built"]
    for name in ("lmc-java.jar", "lmc-java.jsa"):  # read by sessions' users too
        assert (runner_build(runner_source()) / name).stat().st_mode & 0o004, name


def test_a_runner_that_cannot_be_built_is_said_in_one_line_not_a_traceback(
    tmp_path: Path,
) -> None:
    from lmc_runtime import java_runner as java

    source = tmp_path / "kernels" / "lmc-java" / "LmcJava.java"
    source.parent.mkdir(parents=True)
    source.write_text("class LmcJava {}\n")
    (source.parent / "build").write_text("not a folder")  # as root, a read-only one is not
    said: list[str] = []
    assert not java.build_runner(source, said.append)
    assert len(said) == 1 and said[0].startswith("lmc setup: Java stays unavailable:")
