"""`lmc run` against input that is not what it expects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import code_msg


def _lmc_run(data: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "run", "-", "--timeout", "10"],
        input=data,
        capture_output=True,
        timeout=60,
        check=False,
    )


def _line(content: str, msg_id: str) -> bytes:
    return (json.dumps(code_msg(content, id=msg_id)) + "\n").encode()


def test_lmc_run_answers_around_a_line_that_is_not_utf8(tmp_path: Path) -> None:
    """A line of an input file that is not UTF-8 is answered on its own; the
    messages before and after it are answered too."""
    source = tmp_path / "messages.jsonl"
    source.write_bytes(_line("print(1)", "a") + b"\xff\xfe not utf-8\n" + _line("print(2)", "b"))
    done = subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "run", str(source), "--timeout", "10"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    out = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert done.returncode == 1, done.stderr.decode()[-500:]  # one line was not understood
    assert [m.get("in_reply_to") for m in out if m["format"] == "active_line"] == ["a", "b"]


def test_lmc_run_survives_a_surrogate_in_a_message_id() -> None:
    """A message whose id is an escaped lone surrogate is answered without
    breaking the output stream: the next message is answered too."""
    bad = b'{"role": "assistant", "type": "code", "format": "python", "content": "print(1)", "id": "\\ud800"}\n'
    done = _lmc_run(bad + _line("print(2)", "b"))
    assert done.returncode == 1, done.stderr.decode()[-500:]  # the bad line was not understood
    out = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert out[-1]["in_reply_to"] == "b" and out[-1]["content"] is None
