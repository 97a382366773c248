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


def test_with_a_callback_stdin_is_a_terminal_whose_reads_show_their_prompt() -> None:
    """With on_input a run reads a terminal of its own, so ``read -p`` shows its prompt
    (and the callback gets it); an answer longer than a terminal's line (4095 bytes) stops
    the run saying so instead of arriving cut, and the shell goes on."""
    answers = iter(["Ada", "x" * 5000])
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    with Computer(on_input=answer) as c:
        shown = run(c, "[ -t 0 ] && echo terminal\nread -p 'who? ' x\necho \"got [$x]\"", "bash")
        long = run(c, "read -p 'more? ' x\necho \"got ${#x}\"", "bash")
        after = run(c, "echo after", "bash")
    assert shown.output == "terminal\nwho? Ada\ngot [Ada]\n", shown.output
    assert prompts == ["who? ", "more? "]
    assert long.status == "interrupted" and "got 4" not in long.output, long.output
    assert "a terminal reads lines of at most 4095 bytes" in long.output
    assert after.output == "after\n"
