"""The scripts in examples/ run as documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_async_example_answers_input_with_its_callback() -> None:
    assert "'hello Ada\\n'" in run_example("async_embed.py")


def test_sync_example_streams_and_times_out_the_runaway_loop() -> None:
    out = run_example("embed.py")
    assert "'content': '0\\n" in out or "'content': '0\\n1\\n" in out
    assert "timed out after 2 s at line 1" in out
