"""bash on a PTY: state, streaming, exit codes, lines, and code run exactly as written."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts

from ..conftest import run


@pytest.fixture
def bash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Computer]:
    cwd = tmp_path_factory.mktemp("shell-cwd")
    with Computer(cwd=cwd, timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c


def test_state_persists_cwd_variables_functions_and_aliases(bash: Computer, tmp_path: Path) -> None:
    first = run(
        bash,
        f"cd {tmp_path}\nanswer=42\ndeclare -a arr=(x y)\n"
        "greet() { echo \"hello $1\"; }\nalias shout='echo LOUD'\n",
        "bash",
    )
    assert first.status == "ok", first.output
    second = run(bash, 'pwd\necho "$answer ${arr[1]}"\ngreet you\nshout\n', "bash")
    assert second.output == f"{tmp_path}\n42 y\nhello you\nLOUD\n"


def test_heredoc_and_quoted_hashes_and_lineno_are_untouched(bash: Computer, tmp_path: Path) -> None:
    code = (
        "cat <<'EOF'\n"
        "literal $HOME # not a comment\n"
        "EOF\n"
        'echo "a # b" \'c # d\' "$LINENO"\n'
        "cat <<EOF\n"
        "line $LINENO\n"
        "EOF\n"
    )
    result = run(bash, code, "bash")
    assert result.output.startswith("literal $HOME # not a comment\na # b c # d 4\n")
    # Exactly what bash prints running the same file itself: nothing was added.
    script = tmp_path / "same.sh"
    script.write_text(code)
    direct = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30)
    assert result.output == direct.stdout


def test_multi_line_if_case_and_for_blocks(bash: Computer) -> None:
    code = (
        "x=b\n"
        'if [ "$x" = b ]; then\n'
        "  echo yes\n"
        "else\n"
        "  echo no\n"
        "fi\n"
        "case $x in\n"
        "  a) echo A ;;\n"
        "  b) echo B ;;\n"
        "esac\n"
        "for i in 1 2; do\n"
        '  echo "i=$i"\n'
        "done\n"
    )
    assert run(bash, code, "bash").output == "yes\nB\ni=1\ni=2\n"


def test_exit_code_of_the_last_command_is_in_extras(bash: Computer) -> None:
    ok = run(bash, "true", "bash")
    assert ok.final.extras is not None and ok.final.extras["exit_code"] == 0 and ok.status == "ok"
    failed = run(bash, "echo before\n(exit 7)", "bash")
    assert failed.final.extras is not None and failed.final.extras["exit_code"] == 7
    assert failed.status == "error"
    assert failed.output == "before\n"


def test_carriage_return_progress_streams_as_it_is_written(bash: Computer) -> None:
    code = "for i in 1 2 3; do printf '\\rprogress %d' $i; sleep 0.4; done; echo"
    arrivals = []
    start = time.monotonic()
    text = ""
    for m in bash.run("bash", code):
        if m.format == "output":
            arrivals.append(time.monotonic() - start)
            text += m.content
    assert text == "\rprogress 1\rprogress 2\rprogress 3\n"
    assert len(arrivals) >= 3  # several pieces, not one blob at the end


def test_prompt_without_newline_arrives_before_the_command_finishes(bash: Computer) -> None:
    seen = []
    for m in bash.run("bash", "printf 'name? '\nsleep 1.5\necho done"):
        seen.append((m.format, m.content))
    prompt_at = seen.index(("output", "name? "))
    done_at = next(i for i, (f, c) in enumerate(seen) if f == "output" and "done" in c)
    assert prompt_at < done_at
    # The line of the sleep was reported between the two: the prompt came while it ran.
    assert ("active_line", 2) in seen[prompt_at:done_at]


def test_loop_line_is_reported_while_it_runs(bash: Computer) -> None:
    seen = [
        (m.format, m.content) for m in bash.run("bash", "for i in 1 2 3; do echo $i; sleep 1; done")
    ]
    assert ("active_line", 1) in seen
    assert seen.index(("active_line", 1)) < seen.index(("output", "3\n"))
    assert seen[-1][0] == "active_line" and seen[-1][1] is None


def test_lines_map_to_the_users_code_lines(bash: Computer) -> None:
    code = "echo start\n\n# a comment\nsleep 0.5\necho end\n"
    lines = run(bash, code, "bash").lines
    assert 4 in lines
    assert lines[-1] is None


def test_functions_from_earlier_cells_report_the_calling_line(bash: Computer) -> None:
    run(bash, "\n\n\n\n\n\nslow_fn() {\n  sleep 0.5\n}\n", "bash")
    lines = run(bash, "true\nslow_fn\n", "bash").lines
    assert lines == [2, None]


def test_fast_code_reports_only_the_final_null(bash: Computer) -> None:
    assert run(bash, "a=1\nb=2", "bash").lines == [None]


def test_syntax_errors_answer_without_hanging(bash: Computer) -> None:
    broken = run(bash, 'echo "unterminated\nif then fi (', "bash")
    assert broken.status == "error"
    assert "unexpected" in broken.output or "syntax error" in broken.output
    assert run(bash, "echo still here", "bash").output == "still here\n"


def test_binary_and_unicode_output(bash: Computer) -> None:
    result = run(bash, "printf 'h\\xc3\\xa9llo \\xff end\\n'\necho 'π ✓'", "bash")
    assert result.output == "héllo \ufffd end\nπ ✓\n"
