"""bash: user code reading stdin gets end-of-input, or the caller's input callback."""

from __future__ import annotations

from lmc_runtime import Computer

from ..conftest import run


def test_read_gets_end_of_input_without_a_callback() -> None:
    with Computer() as c:
        result = run(c, 'read x\necho "status=$? x=[$x]"\ncat\necho after-cat', "bash")
    assert result.output == "status=1 x=[]\nafter-cat\n"
    assert result.status == "ok"


def test_reading_stdin_never_swallows_the_runtimes_own_input() -> None:
    # If user code could read the shell's terminal, `cat` would eat the next
    # cell's command line and hang; it must get end-of-input at once instead.
    with Computer() as c:
        assert run(c, "cat; echo one", "bash").output == "one\n"
        assert run(c, "echo two", "bash").output == "two\n"


def test_an_external_program_reading_stdin_gets_the_answer_too() -> None:
    with Computer(on_input=lambda prompt: "42") as c:
        result = run(c, "head -n 1 | sed 's/^/got /'", "bash")
    assert result.output.endswith("got 42\n")
