"""What a typed input means, the texts of %help and %languages, %save, and the options."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lmc_runtime import parse_message
from lmc_runtime.computer import LanguageStatus
from lmc_runtime.messages import Message
from lmc_runtime.repl import ReplOptions, add_arguments
from lmc_runtime.repl.commands import (
    Code,
    Command,
    RawMessage,
    classify,
    help_text,
    languages_text,
    save_transcript,
)
from lmc_runtime.repl.options import state_dir

LANGUAGES = [
    LanguageStatus("python", True, None, ("py",)),
    LanguageStatus("shell", True, None, ("bash",)),
    LanguageStatus("applescript", False, "AppleScript needs macOS", ()),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("%python", Command("python", "")),
        ("  %save  out.jsonl ", Command("save", "out.jsonl")),
        ("%restart js", Command("restart", "js")),
        ("%quit", Command("exit", "")),
        ("%timeit x = 1", Command("timeit", "x = 1")),
        ("print(1)\n", Code("print(1)")),
        ("%%time\nx = 1", Code("%%time\nx = 1")),  # a cell magic is code
        ("%python\nprint(1)", Code("%python\nprint(1)")),  # commands are one line
        ("   \n", None),
    ],
)
def test_classify(text: str, expected: object) -> None:
    assert classify(text) == expected


def test_a_line_starting_with_a_brace_is_a_raw_message() -> None:
    raw = classify('{"role": "assistant", "type": "code", "format": "r", "content": "1"}')
    assert isinstance(raw, RawMessage) and raw.problem is None
    assert raw.data["format"] == "r"


def test_bad_json_says_where_instead_of_raising() -> None:
    raw = classify('{"role": assistant}')
    assert isinstance(raw, RawMessage) and raw.data is None
    assert raw.problem is not None and "line 1, column 10" in raw.problem


def test_absurdly_nested_json_is_a_problem_not_a_crash() -> None:
    raw = classify("{" + '"a":[' * 100_000)
    assert isinstance(raw, RawMessage) and raw.problem is not None


def test_help_lists_runnable_languages_and_every_command() -> None:
    text = help_text("python", LANGUAGES)
    assert "%python, %shell" in text and "%applescript" not in text
    for command in ("%restart", "%languages", "%save FILE", "%help", "%exit", "Ctrl-C", "Ctrl-D"):
        assert command in text


def test_languages_marks_the_current_one_and_says_why_not() -> None:
    lines = languages_text("shell", LANGUAGES).splitlines()
    assert lines[0] == "  python (also py): available"
    assert lines[1] == "* shell (also bash): available"
    assert lines[2] == "  applescript: unavailable: AppleScript needs macOS"


def test_save_writes_lmc_json_lines_that_parse_back(tmp_path: Path) -> None:
    sent = {"role": "assistant", "type": "code", "format": "python", "content": "print('é')"}
    reply = Message.computer("console", "output", "é\n", in_reply_to="a").to_dict()
    path = tmp_path / "session.jsonl"
    assert save_transcript(path, [{**sent, "id": "a"}, reply]) == 2
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [parse_message(json.loads(line)).role for line in lines] == ["assistant", "computer"]
    assert "é" in lines[1]  # UTF-8, not \\u escapes


def _options(argv: list[str], env: dict[str, str]) -> ReplOptions:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return ReplOptions.from_args(parser.parse_args(argv), env)


def test_state_dir_precedence(tmp_path: Path) -> None:
    assert state_dir({"LMC_STATE_DIR": str(tmp_path), "XDG_STATE_HOME": "/x"}) == tmp_path
    assert state_dir({"XDG_STATE_HOME": "/x"}) == Path("/x/lmc")
    assert state_dir({}) == Path.home() / ".local" / "state" / "lmc"


def test_options_modes_and_paths(tmp_path: Path) -> None:
    env = {"LMC_STATE_DIR": str(tmp_path)}
    rich = _options([], env)
    assert rich.mode == "rich" and rich.history_path == tmp_path / "history"
    assert rich.image_dir == tmp_path / "images" and rich.preview
    assert _options(["--plain"], env).mode == "plain"
    assert _options([], {**env, "NO_COLOR": "1"}).mode == "plain"
    assert _options([], {**env, "NO_COLOR": ""}).mode == "rich"  # empty NO_COLOR is unset
    jsonl = _options(["--jsonl", "-l", "js", "--timeout", "5", "--image-dir", "/tmp/i"], env)
    assert (jsonl.mode, jsonl.language, jsonl.timeout) == ("jsonl", "js", 5.0)
    assert jsonl.image_dir == Path("/tmp/i")


def test_plain_and_jsonl_exclude_each_other() -> None:
    with pytest.raises(SystemExit):
        _options(["--plain", "--jsonl"], {})


def test_the_lmc_command_has_a_repl_subcommand() -> None:
    from lmc_runtime.cli import _parser

    args = _parser().parse_args(["repl", "--plain", "-l", "r"])
    assert args.language == "r" and args.plain and callable(args.func)
