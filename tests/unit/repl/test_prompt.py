"""The prompt's key bindings, driven through prompt_toolkit's pipe input."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from lmc_runtime.repl.lines import LineReader
from lmc_runtime.repl.prompt import ReplPrompt, open_history

pytestmark = pytest.mark.anyio

ENTER, ALT_ENTER, CTRL_C, CTRL_D = "\r", "\x1b\r", "\x03", "\x04"


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe_input:
        yield pipe_input


def _prompt(pipe: PipeInput, language: str = "python") -> ReplPrompt:
    prompt = ReplPrompt(InMemoryHistory(), colour=True, input=pipe, output=DummyOutput())
    prompt.language = language
    return prompt


async def _read(prompt: ReplPrompt) -> str:
    with anyio.fail_after(30):
        return await prompt.read()


async def test_enter_runs_a_complete_statement(pipe: PipeInput) -> None:
    pipe.send_text("x = 1" + ENTER)
    assert await _read(_prompt(pipe)) == "x = 1"


async def test_enter_in_an_open_block_goes_on_indented_and_a_blank_line_runs(
    pipe: PipeInput,
) -> None:
    pipe.send_text("for i in range(2):" + ENTER + "print(i)" + ENTER + ENTER)
    assert await _read(_prompt(pipe)) == "for i in range(2):\n    print(i)\n    "


async def test_closing_bracket_on_an_indented_blank_line_dedents(pipe: PipeInput) -> None:
    pipe.send_text("function f() {" + ENTER + "return 1" + ENTER + "}" + ENTER)
    assert await _read(_prompt(pipe, "javascript")) == "function f() {\n    return 1\n}"


async def test_alt_enter_runs_whatever_is_there(pipe: PipeInput) -> None:
    pipe.send_text("if x:" + ALT_ENTER)
    assert await _read(_prompt(pipe)) == "if x:"


async def test_enter_in_the_middle_of_the_text_inserts_a_line(pipe: PipeInput) -> None:
    left = "\x1b[D"
    pipe.send_text("ab" + left + ENTER + ALT_ENTER)
    assert await _read(_prompt(pipe)) == "a\nb"


async def test_ctrl_c_clears_the_line_and_ctrl_d_leaves(pipe: PipeInput) -> None:
    prompt = _prompt(pipe)
    pipe.send_text("half typed" + CTRL_C)
    with pytest.raises(KeyboardInterrupt):
        await _read(prompt)
    pipe.send_text("print(2)" + ENTER)
    assert await _read(prompt) == "print(2)"  # nothing of the cleared line is left
    pipe.send_text(CTRL_D)
    with pytest.raises(EOFError):
        await _read(prompt)


async def test_ask_answers_an_input_prompt(pipe: PipeInput) -> None:
    pipe.send_text("Ada" + ENTER)
    with anyio.fail_after(30):
        assert await _prompt(pipe).ask("name? ") == "Ada"


async def test_history_persists_in_its_file(tmp_path: Path) -> None:
    path = tmp_path / "state" / "history"
    for text in ("x = 1", "y = 2"):
        with create_pipe_input() as pipe:
            prompt = ReplPrompt(open_history(path), colour=False, input=pipe, output=DummyOutput())
            pipe.send_text(text + ENTER)
            await _read(prompt)
    assert [line for line in path.read_text().splitlines() if line.startswith("+")] == [
        "+x = 1",
        "+y = 2",
    ]
    with create_pipe_input() as pipe:  # Up recalls the last input of an earlier session
        prompt = ReplPrompt(open_history(path), colour=False, input=pipe, output=DummyOutput())
        pipe.send_text("\x1b[A" + ENTER)
        assert await _read(prompt) == "y = 2"


def test_history_falls_back_to_memory_when_the_file_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    history = open_history(blocker / "history")  # a file is in the way of the directory
    assert type(history).__name__ == "InMemoryHistory"


async def test_line_reader_groups_lines_by_completeness() -> None:
    reader = LineReader(io.StringIO("x = 1\nfor i in range(2):\n    print(i)\n\nif x:\n    y = 1"))
    with anyio.fail_after(30):
        assert await reader.read() == "x = 1"
        assert await reader.read() == "for i in range(2):\n    print(i)\n"
        assert await reader.read() == "if x:\n    y = 1"  # the end of input ends it
        with pytest.raises(EOFError):
            await reader.read()
