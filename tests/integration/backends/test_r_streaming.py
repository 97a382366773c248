"""R output streams before Sys.sleep(), and output of stopped code is never lost.

Regression: evaluate held a top-level expression's output until it ended, so a
loop that printed and waited showed nothing until the end, and output of an
expression stopped by a timeout or interrupt() never arrived at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends.r import RBackend

pytestmark = pytest.mark.skipif(
    not RBackend().availability().available, reason="R and IRkernel are not installed"
)


@pytest.fixture(scope="module")
def r() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=5.0)) as c:
        yield c


def test_output_before_sys_sleep_streams_while_the_loop_runs(r: Computer, tmp_path: Path) -> None:
    """A handshake, not a timing: the code waits for a file the test creates only
    after it has seen the first line, so without streaming this times out."""
    go = tmp_path / "go"
    code = f'cat("ready\\n")\nwhile (!file.exists("{go}")) Sys.sleep(0.05)\ncat("done\\n")'
    seen = []
    for message in r.run("r", code, timeout=30):
        if message.format == "output":
            seen.append(str(message.content))
            if "ready" in message.content:
                go.touch()
    assert "".join(seen) == "ready\ndone\n"
    assert message.content is None and (message.extras or {}).get("status") == "ok"


@pytest.mark.parametrize(
    "code",
    [
        'repeat { cat("spam\\n"); Sys.sleep(0.01) }',
        'x <- 0\nrepeat { x <- x + 1; if (x %% 100000 == 0) cat("tick\\n") }',
    ],
    ids=["sleeping", "busy"],
)
def test_output_of_code_stopped_by_a_timeout_is_not_lost(r: Computer, code: str) -> None:
    messages = list(r.run("r", code, timeout=1.5))
    text = "".join(str(m.content) for m in messages if m.format == "output")
    assert "spam" in text or "tick" in text, text
    assert (messages[-1].extras or {}).get("status") == "timeout"
    after = list(r.run("r", 'cat("alive\\n")'))
    assert any(m.content == "alive\n" for m in after)
