"""`lmc run`: JSON lines in, one JSON line per computer message out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def lmc(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lmc_runtime", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


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
    assert done.returncode == 0, done.stderr
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
    assert any("unknown language 'cobol'" in str(m["content"]) for m in out)
    finals = {
        m["in_reply_to"]: (m.get("extras") or {}).get("status")
        for m in out
        if m["format"] == "active_line" and m["content"] is None
    }
    # Every language the demo uses ends cleanly (m4 is the ZeroDivisionError).
    expected = {"m1": "ok", "m2": "ok", "m3": "ok", "m4": "error", "m6": "ok", "m7": "ok"}
    expected.update({"m8": "ok", "m9": "ok"})
    assert {k: finals.get(k) for k in expected} == expected


def test_lmc_languages_lists_python() -> None:
    done = lmc("languages")
    assert done.returncode == 0 and "python (also py, python3, ipython): available" in done.stdout
