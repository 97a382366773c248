"""Reading input: answered by ``on_input``, or, without it, failing fast (never a hang).

JavaScript and TypeScript read their stdin as a stream too (``readline``,
``process.stdin`` events, async iteration): those reads behave as ``fs.readSync(0)``
does, in each of the ways :data:`STREAM_READS` lists.
"""

from __future__ import annotations

import re

import pytest

from .harness import ComputerFactory, Result, assert_ends_once, run
from .languages import GOT, Profile

#: A run that reads input must end well before this; only a hang reaches it.
PROMPT_BOUND = 10.0
#: What the note on a read that nothing answers says, in every language.
NOTHING_ANSWERS = "nothing answers input here: pass on_input= to Computer"


def assert_says_how_to_answer(result: Result) -> None:
    """The run failed on a read with nothing to answer it, and a note says how to answer."""
    assert result.status == "error", result.describe()
    notes = "".join(str(m.content) for m in result.notices)
    assert NOTHING_ANSWERS in notes, f"no note on how to answer input:\n{result.describe()}"


@pytest.mark.local_only("on_input is a callback in the caller's process")
def test_input_is_answered_by_the_callback(lang: Profile, make_computer: ComputerFactory) -> None:
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return "Ada"

    computer = make_computer(on_input=answer)
    result = run(computer, lang, lang.read_line, timeout=PROMPT_BOUND)
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    assert result.output.endswith(GOT.format("Ada") + "\n"), result.describe()
    assert prompts == ["name? "], prompts


def test_input_without_a_callback_reads_end_of_input_or_fails_saying_how_to_answer_it(
    lang: Profile, make_computer: ComputerFactory
) -> None:
    """A read with nothing to answer it ends at once: end-of-input (the shells, node,
    Java), or an error (Python's input(), R's readline()) with a note on how to answer."""
    computer = make_computer()
    result = run(computer, lang, lang.read_line, timeout=PROMPT_BOUND)
    assert_ends_once(result)
    assert result.status in ("ok", "error"), result.describe()
    if result.status == "ok":
        assert result.output.endswith(lang.at_end_of_input + "\n"), result.describe()
    else:
        assert_says_how_to_answer(result)
    after = run(computer, lang, lang.print_line("next"))
    assert after.status == "ok" and after.output == "next\n", after.describe()


@pytest.mark.local_only("on_input is a callback in the caller's process")
def test_a_failing_callback_stops_the_run_fast_and_keeps_the_state(
    lang: Profile, make_computer: ComputerFactory
) -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("no keyboard here")

    computer = make_computer(on_input=broken)
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    result = run(computer, lang, lang.read_line, timeout=PROMPT_BOUND)
    assert_ends_once(result)
    assert result.status == "interrupted", result.describe()
    assert result.extras.get("state_lost") is False, result.describe()
    assert not re.search(r"^got:\[", result.output, re.M), "the code went on past the input"
    assert [m for m in result.notices if m.status == "interrupted"], result.describe()
    assert "no keyboard here" in "".join(str(m.content) for m in result.notices), (
        f"the callback's failure is not told:\n{result.describe()}"
    )
    after = run(computer, lang, lang.show_kept)
    assert after.status == "ok" and after.output == "kept-value\n", after.describe()


_JS_QUESTION = """\
const rl = require("readline").createInterface({ input: process.stdin, output: process.stdout })
rl.question("who? ", (line) => { console.log("got:[" + line + "]"); rl.close() })"""
_SHELL_READ_P = "read -p 'who? ' line\necho \"got:[$line]\""
#: Per language, a read whose prompt ``who? `` the read itself writes (or, in Java, a
#: ``print`` just before it); each prints ``got:[line]``.
PROMPTED_READS = {
    "python": "line = input('who? ')\nprint('got:[' + line + ']')",
    "r": 'line <- readline("who? ")\ncat("got:[", line, "]\\n", sep = "")',
    "shell": _SHELL_READ_P,
    "sh": _SHELL_READ_P,
    "zsh": "read 'line?who? '\necho \"got:[$line]\"",
    "javascript": _JS_QUESTION,
    "typescript": _JS_QUESTION,
    "java": (
        'System.out.print("who? ");\n'
        "String line = new java.util.Scanner(System.in).nextLine();\n"
        'System.out.println("got:[" + line + "]");'
    ),
}


@pytest.mark.local_only("on_input is a callback in the caller's process")
def test_the_prompt_of_a_read_reaches_the_callback(
    lang: Profile, make_computer: ComputerFactory
) -> None:
    """The prompt a read shows (the shells' ``read -p``, a readline question, what was
    printed on the line before) is what the callback gets, as for Python's input()."""
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return "Ada"

    computer = make_computer(on_input=answer)
    result = run(computer, lang, PROMPTED_READS[lang.name], timeout=PROMPT_BOUND)
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    assert result.output.endswith(GOT.format("Ada") + "\n"), result.describe()
    assert prompts == ["who? "], prompts


#: Ways node code reads a line as a stream: each asks ``name? `` and prints ``got:[line]``;
#: at end of input each prints ``got:[]``, but for an awaited question (see
#: :data:`NEVER_ANSWERED`), which node never settles.
STREAM_READS = {
    "readline-question": """\
const readline = require("readline")
const rl = readline.createInterface({ input: process.stdin, output: process.stdout })
let answered = false
rl.on("close", () => { if (!answered) console.log("got:[]") })
rl.question("name? ", (line) => { answered = true; console.log("got:[" + line + "]"); rl.close() })""",
    "readline-promises": """\
const rl = require("readline/promises").createInterface({ input: process.stdin, output: process.stdout })
const line = await rl.question("name? ")
rl.close()
console.log("got:[" + line + "]")""",
    "data-events": """\
process.stdout.write("name? ")
process.stdin.setEncoding("utf8")
const line = await new Promise((resolve) => {
  let text = ""
  process.stdin.on("data", (chunk) => {
    text += chunk
    if (text.includes("\\n")) { process.stdin.pause(); resolve(text.split("\\n")[0]) }
  })
  process.stdin.on("end", () => resolve(text))
  process.stdin.resume() // a stream once paused flows again only when resumed
})
console.log("got:[" + line + "]")""",
    "readable-event": """\
process.stdout.write("name? ")
const line = await new Promise((resolve) => {
  process.stdin.once("readable", () => {
    const chunk = process.stdin.read()
    resolve(chunk === null ? "" : chunk.toString().split("\\n")[0])
  })
})
console.log("got:[" + line + "]")""",
    "async-iteration": """\
process.stdout.write("name? ")
const rl = require("readline").createInterface({ input: process.stdin })
let line = ""
for await (const each of rl) {
  line = each
  rl.close()
  break
}
console.log("got:[" + line + "]")""",
}
#: The reads whose code waits for ever at end of input (plain node would exit instead).
NEVER_ANSWERED = {"readline-promises"}


#: The languages of the node runner.
node_languages = pytest.mark.parametrize("lang", ["javascript", "typescript"], indirect=True)


@pytest.mark.local_only("on_input is a callback in the caller's process")
@node_languages
@pytest.mark.parametrize("way", list(STREAM_READS))
def test_a_stream_read_of_stdin_is_answered_by_the_callback(
    lang: Profile, way: str, make_computer: ComputerFactory
) -> None:
    """node: readline and process.stdin reads reach on_input with their prompt (they
    used to wait unseen until the timeout)."""
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return "Ada"

    computer = make_computer(on_input=answer)
    result = run(computer, lang, STREAM_READS[way], timeout=PROMPT_BOUND)
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    assert result.output == "name? Ada\n" + GOT.format("Ada") + "\n", result.describe()
    assert prompts == ["name? "], prompts
    # The next run reads a stdin of its own (in a block: its consts are declared again).
    after = run(computer, lang, "{\n" + STREAM_READS[way] + "\n}", timeout=PROMPT_BOUND)
    assert after.status == "ok" and after.output.endswith(GOT.format("Ada") + "\n"), (
        after.describe()
    )
    assert prompts == ["name? "] * 2, prompts


@node_languages
@pytest.mark.parametrize("way", list(STREAM_READS))
def test_a_stream_read_of_stdin_without_a_callback_gets_end_of_input_at_once(
    lang: Profile, way: str, make_computer: ComputerFactory
) -> None:
    """node: readline and process.stdin reads with nothing to answer them get end-of-input
    at once (they used to wait until the timeout); code left waiting for ever on it ends
    in an error saying how to answer input."""
    computer = make_computer()
    result = run(computer, lang, STREAM_READS[way], timeout=PROMPT_BOUND)
    assert_ends_once(result)
    if way in NEVER_ANSWERED:
        assert_says_how_to_answer(result)
    else:
        assert result.status == "ok", result.describe()
        assert result.output == "name? " + GOT.format("") + "\n", result.describe()
    after = run(computer, lang, lang.print_line("next"))
    assert after.status == "ok" and after.output == "next\n", after.describe()


@pytest.mark.local_only("on_input is a callback in the caller's process")
@node_languages
def test_a_read_a_stopped_run_left_waiting_takes_nothing_from_the_next_run(
    lang: Profile, make_computer: ComputerFactory
) -> None:
    """node: a readline question still waiting when its run was stopped gets end-of-input
    as the run ends; it used to live on and ask the callback during the next run."""
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        if len(prompts) == 1:
            raise RuntimeError("no keyboard here")
        return "Ada"

    computer = make_computer(on_input=answer)
    assert run(computer, lang, lang.set_kept("kept-value")).status == "ok"
    stopped = run(computer, lang, STREAM_READS["readline-promises"], timeout=PROMPT_BOUND)
    assert stopped.status == "interrupted", stopped.describe()
    after = run(computer, lang, lang.show_kept, timeout=PROMPT_BOUND)
    assert after.status == "ok" and after.output == "kept-value\n", after.describe()
    assert prompts == ["name? "], prompts
