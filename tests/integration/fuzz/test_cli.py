"""``lmc run`` given a JSONL batch of fuzzed lines, from a file and on stdin.

Each example is one process: every line that is not blank and not a valid message
other than code gets one answer (a refusal, or a run ending in its final message),
in order; a last ``print`` line still runs; the exit status is 0 or 1 with no
traceback; and no process the run started is left once it has ended (found by
a mark in their environment, which every process the run starts inherits).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lmc_runtime.messages import parse_message

from .checks import GUARD, Tally, answers, check_replies, fuzz_settings
from .strategies import Wire, code_message, wires

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
LAST = Wire(
    json.dumps(code_message("python", "print(424242)", id="last")).encode(),
    "run",
    "last",
    "424242\n",
)

#: One line each: a wire with a newline in it would be two.
lines = wires().filter(lambda wire: b"\n" not in wire.data)


def _marked(mark: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("LMC_FUZZ_MARK") == mark:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _left_behind(mark: str) -> list[psutil.Process]:
    """The processes with ``mark`` still running (a bounded wait for them to end)."""
    deadline = time.monotonic() + 10
    while (found := _marked(mark)) and time.monotonic() < deadline:
        psutil.wait_procs(found, 0.2)
    return found


def _run(batch: list[Wire], path: Path | None) -> subprocess.CompletedProcess[bytes]:
    data = b"".join(wire.data + b"\n" for wire in [*batch, LAST])
    mark = uuid.uuid4().hex
    argv = [sys.executable, "-m", "lmc_runtime", "run", "--jsonl", "--timeout", "30"]
    if path is not None:
        path.write_bytes(data)
    done = subprocess.run(
        [*argv, str(path) if path is not None else "-"],
        input=None if path is not None else data,
        capture_output=True,
        timeout=GUARD * 2,
        cwd=REPO,
        env={**os.environ, "LMC_FUZZ_MARK": mark},
        check=False,
    )
    assert not _left_behind(mark), "processes left behind"
    return done


def _check(batch: list[Wire], path: Path | None, tally: Tally) -> None:
    with tally.trying("process", batch):
        done = _run(batch, path)
        assert done.returncode in (0, 1), done.stderr[-2000:]
        assert b"Traceback" not in done.stderr, done.stderr[-2000:]
        replies = [parse_message(json.loads(line)) for line in done.stdout.splitlines()]
        answered = [wire for wire in [*batch, LAST] if wire.expect != "context"]
        groups = answers(replies)
        assert len(groups) == len(answered), (len(groups), len(answered), done.stdout[-2000:])
    for wire, group in zip(answered, groups, strict=True):
        with tally.trying(wire.label, wire.data):
            check_replies(group, wire)


@fuzz_settings(2, campaign_share=0.1)
@given(batch=st.lists(lines, min_size=1, max_size=12))
def test_a_jsonl_file_gets_one_answer_per_line(tmp_path: Path, batch: list[Wire]) -> None:
    _check(batch, tmp_path / "batch.jsonl", Tally("lmc run FILE"))


@fuzz_settings(2, campaign_share=0.1)
@given(batch=st.lists(lines, min_size=1, max_size=12))
def test_stdin_gets_one_answer_per_line(batch: list[Wire]) -> None:
    _check(batch, None, Tally("lmc run (stdin)"))
