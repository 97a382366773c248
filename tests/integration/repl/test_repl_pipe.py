"""`lmc repl` with stdin that is not a terminal: inputs grouped by the completeness rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime import parse_message

pytestmark = pytest.mark.integration


def repl(tmp_path: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LMC_STATE_DIR": str(tmp_path / "state")}
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "repl", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=tmp_path,
    )


def messages(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_jsonl_prints_the_raw_messages_of_every_run(tmp_path: Path) -> None:
    script = "\n".join(
        [
            "x = 20",
            "for i in range(2):",
            "    print(x + i)",
            "",
            '{"role": "assistant", "type": "code", "format": "python", "content": "print(x)", "id": "raw1"}',
            "{not json",
            "%save session.jsonl",
        ]
    )
    done = repl(tmp_path, "--jsonl", stdin=script + "\n")
    assert done.returncode == 0, done.stderr
    out = messages(done.stdout)
    sent = [m for m in out if m["role"] == "assistant"]
    assert [m["content"] for m in sent] == [
        "x = 20",
        "for i in range(2):\n    print(x + i)",
        "print(x)",
    ]
    assert sent[2]["id"] == "raw1"
    outputs = [m["content"] for m in out if m.get("format") == "output"]
    assert outputs == ["20\n21\n", "20\n"]
    finals = [m for m in out if m.get("format") == "active_line" and m["content"] is None]
    assert [m["in_reply_to"] for m in finals] == [m["id"] for m in sent]
    # the REPL's own remarks stay off stdout
    assert "not an LMC message: it is not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr
    saved = (tmp_path / "session.jsonl").read_text().splitlines()
    assert [parse_message(json.loads(line)).to_dict() for line in saved] == out


def test_plain_output_has_no_escapes_and_names_the_image_file(tmp_path: Path) -> None:
    script = "\n".join(
        [
            "import matplotlib.pyplot as plt",
            "plt.plot([1, 2]); plt.show()",
            "print('done')",
        ]
    )
    done = repl(tmp_path, "--plain", stdin=script + "\n")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    image = next(line for line in done.stdout.splitlines() if line.startswith("[image] "))
    assert Path(image.removeprefix("[image] ")).is_file()
    assert done.stdout.rstrip().endswith("done")


def test_no_color_means_plain(tmp_path: Path) -> None:
    env = {**os.environ, "LMC_STATE_DIR": str(tmp_path), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "repl"],
        input="print('x' * 3)\n1/0\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0 and "xxx" in done.stdout and "ZeroDivisionError" in done.stdout
    assert "\x1b" not in done.stdout


def test_commands_languages_restart_and_switching(tmp_path: Path) -> None:
    script = "\n".join(
        [
            "%languages",
            "y = 1",
            "%restart",
            "print('y' in globals())",  # the restart lost the state
            "%applescript",  # not available on Linux: says why, stays in Python
            "%help",
            "%js",
            "console.log(6 * 7)",
        ]
    )
    done = repl(tmp_path, "--plain", stdin=script + "\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "* python (also py, python3, ipython): available" in out
    assert "python restarted; its state is gone" in out
    assert "\nFalse\n" in out
    assert "error: applescript is not available here" in out
    assert "%save FILE" in out and "switched to javascript" in out
    assert out.rstrip().endswith("42")


def test_input_is_answered_from_the_next_line(tmp_path: Path) -> None:
    done = repl(tmp_path, "--plain", stdin="name = input('who? ')\nAda\nprint('hi', name)\n")
    assert done.returncode == 0, done.stderr
    assert "hi Ada" in done.stdout


def test_an_unknown_start_language_is_an_error(tmp_path: Path) -> None:
    done = repl(tmp_path, "--plain", "-l", "cobol", stdin="")
    assert done.returncode == 2 and "unknown language 'cobol'" in done.stdout


def test_save_to_an_unwritable_place_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    done = repl(tmp_path, "--plain", stdin=f"%save {tmp_path}/missing/dir/x.jsonl\n%save\n")
    assert done.returncode == 0
    assert "error: could not write" in done.stdout and "error: usage: %save FILE" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
