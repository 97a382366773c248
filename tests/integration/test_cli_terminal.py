"""`lmc run` and `lmc demo` on a real terminal (a PTY): text for people, not base64."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pexpect
import pytest

from .lmc_cli import REPO

pytestmark = pytest.mark.integration

#: The longest line the demo may print on a terminal.
MAX_LINE = 300


def _spawn(*args: str) -> pexpect.spawn:
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(REPO)}
    return pexpect.spawn(
        sys.executable,
        ["-m", "lmc_runtime", *args],
        cwd=str(REPO),
        env=env,
        encoding="utf-8",
        timeout=180,
        dimensions=(50, 160),
    )


def _finish(child: pexpect.spawn) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None, child.signalstatus
    return child.exitstatus, child.before


def _shown_lines(raw: str) -> list[str]:
    """What each printed line leaves on the screen: the text after its last carriage
    return or erase, without escape sequences."""
    lines = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        shown = re.split(r"\r(?:\x1b\[2K)?", line)[-1]
        lines.append(re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", shown))
    return lines


def test_the_demo_on_a_terminal_is_text_with_file_paths(tmp_path: Path) -> None:
    """Guards lmc run on a terminal: no base64 dumped, short lines, images and HTML as
    files whose paths are printed, the code and its output shown, exit 0."""
    child = _spawn("run", "examples/demo.jsonl", "--output-dir", str(tmp_path / "out"))
    status, raw = _finish(child)
    assert status == 0, raw[-2000:]
    longest = max(len(line) for line in raw.split("\n"))
    assert longest <= MAX_LINE, longest
    shown = _shown_lines(raw)
    assert "python> 2380*3875" in shown and "9222500" in shown
    assert "step 2" in shown and "[1] 1 2 3" in shown
    assert any(line.startswith("[error: ZeroDivisionError") for line in shown), shown
    images = [line.split()[1] for line in shown if line.startswith("[image] ")]
    pages = [line.split()[1] for line in shown if line.startswith("[html] ")]
    assert images and pages, shown
    for path in [*images, *pages]:
        assert Path(path).parent == (tmp_path / "out").resolve() and Path(path).stat().st_size
    assert Path(images[0]).read_bytes().startswith(b"\x89PNG")
    assert "iVBORw0KGgo" not in raw  # no base64 PNG on the terminal


def test_jsonl_on_a_terminal_writes_json_lines() -> None:
    child = _spawn("demo", "--jsonl")
    status, raw = _finish(child)
    assert status == 0, raw[-2000:]
    assert raw.lstrip().startswith('{"role": "computer"')
    assert "iVBORw0KGgo" in raw  # the image's base64, as the protocol carries it


def test_reading_messages_from_a_terminal_says_how_to_end() -> None:
    """Guards against lmc run waiting silently on a terminal's stdin."""
    child = _spawn("run")
    child.expect("reading LMC messages as JSON lines from the terminal; end with Ctrl-D")
    child.sendline('{"role": "assistant", "type": "code", "format": "python", "content": "6*7"}')
    child.expect("42")
    child.sendeof()
    status, _ = _finish(child)
    assert status == 0


def test_ctrl_c_while_code_runs_exits_130() -> None:
    child = _spawn("run")
    child.expect("end with Ctrl-D")
    child.sendline(
        '{"role": "assistant", "type": "code", "format": "python", '
        "\"content\": \"import time\\nprint('run' + 'ning', flush=True)\\ntime.sleep(60)\"}"
    )
    child.expect("running")  # the output, not the echo of the line typed
    child.sendintr()
    status, _ = _finish(child)
    assert status == 130


def test_ctrl_c_while_the_computer_starts_exits_130() -> None:
    """Guards against a hang: an interrupt while the Computer started its event-loop
    thread left that thread running and lmc waiting for it."""
    child = _spawn("run")
    child.expect("end with Ctrl-D")  # said just before the Computer starts
    child.sendintr()
    status, _ = _finish(child)
    assert status == 130


def test_a_timeout_on_a_terminal_shows_its_note_not_a_keyboardinterrupt(tmp_path: Path) -> None:
    """Guards: a run stopped by --timeout showed a KeyboardInterrupt traceback and
    ended '[timeout: KeyboardInterrupt]', as if the code had failed."""
    message = {
        "role": "assistant",
        "type": "code",
        "format": "python",
        "content": "print('started')\nwhile True:\n    pass",
    }
    source = tmp_path / "loop.jsonl"
    source.write_text(json.dumps(message) + "\n")
    status, raw = _finish(_spawn("run", "--timeout", "1", str(source)))
    assert status == 0, raw[-2000:]
    shown = _shown_lines(raw)
    assert "KeyboardInterrupt" not in raw and "Traceback" not in raw, raw[-2000:]
    notes = [line for line in shown if line.startswith("[lmc] Execution timed out after 1 s")]
    assert len(notes) == 1 and "state was kept" in notes[0], shown
    assert "[timeout]" in shown, shown
