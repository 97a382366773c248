"""`lmc run`: JSON lines in, one JSON line per computer message out."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import lmc_runtime

from .lmc_cli import REPO, lmc

EXAMPLES = REPO / "examples"


def code(content: str, msg_id: str, language: str = "python") -> str:
    message = {"role": "assistant", "type": "code", "format": language, "content": content}
    return json.dumps({**message, "id": msg_id})


def test_lmc_run_answers_each_code_message_in_order_with_json_lines() -> None:
    lines = [
        json.dumps({"role": "user", "type": "message", "content": "context only"}),
        json.dumps(
            {
                "role": "assistant",
                "type": "code",
                "format": "python",
                "content": "x = 20",
                "id": "a",
            }
        ),
        "this is not json",
        json.dumps(
            {
                "role": "assistant",
                "type": "code",
                "format": "python",
                "content": "print(x + 1)",
                "id": "b",
            }
        ),
    ]
    done = lmc("run", "-", stdin="\n".join(lines) + "\n")
    assert done.returncode == 1, done.stderr  # the line that is not JSON was not understood
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(m["role"] == "computer" for m in out)
    assert [m.get("in_reply_to") for m in out] == ["a", None, "b", "b"]
    assert out[1]["extras"]["status"] == "malformed" and "not JSON" in out[1]["content"]
    assert out[2]["content"] == "21\n"
    assert out[3]["format"] == "active_line" and out[3]["content"] is None


def test_lmc_run_chunk_framing_is_open_interpreters() -> None:
    msg = {
        "role": "assistant",
        "type": "code",
        "format": "python",
        "content": "print('hi')",
        "id": "c",
    }
    done = lmc("run", "--chunks", stdin=json.dumps(msg) + "\n")
    assert done.returncode == 0, done.stderr
    chunks = [json.loads(line) for line in done.stdout.splitlines()]
    console = {"role": "computer", "type": "console"}
    assert chunks[0] == {**console, "start": True} and chunks[-1] == {**console, "end": True}
    assert [(c["format"], c["content"]) for c in chunks[1:-1]][-2:] == [
        ("output", "hi\n"),
        ("active_line", None),
    ]


def test_the_demo_file_runs(tmp_path: Path) -> None:
    done = lmc("run", str(EXAMPLES / "demo.jsonl"))
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(m["type"] == "image" for m in out)
    finals = {
        m["in_reply_to"]: (m.get("extras") or {}).get("status")
        for m in out
        if m["format"] == "active_line" and m["content"] is None
    }
    # Every language the demo uses ends cleanly (m4 is the ZeroDivisionError).
    expected = {"m1": "ok", "m2": "ok", "m3": "ok", "m4": "error", "m5": "ok", "m6": "ok"}
    expected.update({"m7": "ok", "m8": "ok"})
    assert {k: finals.get(k) for k in expected} == expected


def test_the_example_demo_is_the_packaged_demo() -> None:
    """Guards the README's demo (examples/) and lmc demo's from drifting apart."""
    packaged = REPO / "lmc_runtime" / "demo" / "demo.jsonl"
    assert (EXAMPLES / "demo.jsonl").read_bytes() == packaged.read_bytes()


def test_lmc_languages_lists_python() -> None:
    done = lmc("languages")
    assert done.returncode == 0 and "python (also py, python3, ipython): available" in done.stdout


def _without_ids(out: str) -> list[dict[str, Any]]:
    """The messages without their ids and times, and without the running-line marks:
    the kernel's sampler reports a line only if it runs long enough to be seen."""
    messages = [json.loads(line) for line in out.splitlines()]
    for message in messages:
        del message["id"], message["created_at"]
    return [m for m in messages if m["format"] != "active_line" or m["content"] is None]


def test_jsonl_writes_what_a_pipe_gets() -> None:
    """Guards the machine-readable output: --jsonl and a pipe give the same JSON lines."""
    batch = "\n".join([code("print('a')\n1 / 0", "x"), "[]", code("2 + 3", "y")]) + "\n"
    piped, forced = lmc("run", stdin=batch), lmc("run", "--jsonl", stdin=batch)
    assert piped.returncode == forced.returncode == 1, piped.stderr + forced.stderr
    assert _without_ids(piped.stdout) == _without_ids(forced.stdout)
    kinds = [(m["format"], m.get("in_reply_to")) for m in _without_ids(piped.stdout)]
    assert kinds[0] == ("output", "x") and kinds[-1] == ("active_line", "y")


def test_errors_in_the_code_itself_still_exit_0() -> None:
    done = lmc("run", stdin=code("raise ValueError('boom')", "e") + "\n")
    assert done.returncode == 0, done.stderr
    assert "ValueError" in done.stdout


def test_an_unknown_language_exits_1_and_the_batch_goes_on() -> None:
    batch = code("DISPLAY 'HI'.", "c", language="cobol") + "\n" + code("print(7)", "p") + "\n"
    done = lmc("run", stdin=batch)
    assert done.returncode == 1, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert "unknown language 'cobol'" in out[0]["content"]
    assert out[0]["extras"]["status"] == "not_understood"
    assert any(m["content"] == "7\n" for m in out)


def test_a_missing_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.jsonl"
    done = lmc("run", str(missing))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"cannot read {missing}: No such file or directory" in done.stderr


def test_a_folder_given_as_the_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = lmc("run", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert str(tmp_path) in done.stderr


def test_a_missing_demo_file_points_at_lmc_demo(tmp_path: Path) -> None:
    done = lmc("run", str(tmp_path / "examples" / "demo.jsonl"))
    assert done.returncode == 2 and "lmc demo" in done.stderr


def test_version_is_the_package_version() -> None:
    done = lmc("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"lmc-runtime {lmc_runtime.__version__}\n"


def test_help_documents_the_exit_statuses() -> None:
    done = lmc("run", "--help")
    assert done.returncode == 0
    for status in ("0 ", "1 ", "2 ", "130"):
        assert f"\n  {status}" in done.stdout


def test_lmc_demo_runs_the_packaged_demo_as_json_lines_when_piped() -> None:
    done = lmc("demo")
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(m["content"] == "9222500" and m["in_reply_to"] == "m1" for m in out)
    assert any(m["type"] == "image" and m["in_reply_to"] == "m3" for m in out)


def test_python_option_runs_code_in_that_interpreter(tmp_path: Path) -> None:
    """``--python`` reaches the Computer: a venv's python runs the code, and one
    without ipykernel is reported unavailable with what to install."""
    import subprocess
    import sys

    root = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(root)],
        check=True,
        timeout=120,
    )
    python = root / "bin" / "python"
    done = lmc("run", "--python", str(python), stdin=code("import sys; print(sys.prefix)", "v"))
    assert done.returncode == 0, done.stderr
    assert any(json.loads(line)["content"] == f"{root}\n" for line in done.stdout.splitlines())
    listed = lmc("languages", "--python", str(tmp_path / "none" / "python"))
    assert "python (also py, python3, ipython): unavailable" in listed.stdout


def test_ctrl_c_on_lmc_run_says_interrupted_and_exits_130() -> None:
    """Ctrl-C during a run: one 'lmc: interrupted' line on stderr, exit status 130."""
    line = code("print('started', flush=True)\nimport time\ntime.sleep(120)", "k")
    with subprocess.Popen(
        [sys.executable, "-m", "lmc_runtime", "run", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        first = proc.stdout.readline()  # the code's own output: it is running
        assert json.loads(first)["content"] == "started\n"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.splitlines() == ["lmc: interrupted"]


def test_regression_a_reader_that_leaves_early_gets_no_traceback() -> None:
    """Regression: `lmc demo | head -1` printed a BrokenPipeError traceback once head
    had its line and left. The command now ends quietly (exit 1), its interpreters
    closed."""
    done = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m lmc_runtime demo | head -1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.stdout.count("\n") == 1 and '"role": "computer"' in done.stdout, done.stdout
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
