"""The ``terminal`` fixture: a tmux pane of its own per test, killed afterwards."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .terminal import Terminal


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is missing: `lmc setup` installs it")
    term = Terminal(tmp_path)
    try:
        yield term
    finally:
        term.close()
