"""bash: the code writing to the DEBUG trap's line-record pipe itself."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer

from ..conftest import run

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")

FLOOD = """\
fd=$(echo "$__lmc_trap" | grep -o '>&[0-9]*' | head -1 | tr -d '>&')
head -c 256M /dev/zero | tr '\\0' a >&"$fd"
echo "flooded $fd"
"""


@pytest.fixture
def bash(tmp_path: Path) -> Iterator[Computer]:
    with Computer(cwd=tmp_path) as c:
        yield c


def test_regression_a_flood_of_the_record_pipe_leaves_the_session_working(
    bash: Computer,
) -> None:
    """Regression: 256 MiB with no newline written to the line-record pipe were all
    kept by the host and joined again with every read (minutes of the server's CPU,
    its memory growing by the size of the flood). Now the flood passes in a bounded
    time, and the runs after it have their output and their active lines."""
    flooded = run(bash, FLOOD, "bash", timeout=120)
    assert flooded.status == "ok" and flooded.output.startswith("flooded ")
    assert flooded.output.strip() != "flooded"  # the pipe was found
    after = run(bash, "true\nsleep 0.5\necho still works", "bash", timeout=60)
    assert after.status == "ok" and after.output == "still works\n"
    assert 2 in after.lines
