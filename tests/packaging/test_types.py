"""What mypy says of the package's public types, checked by running it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

#: Code typed against ComputerLike; the one line mypy must refuse ends with ``# refused``.
USES = """\
from lmc_runtime import Computer, ComputerLike
from lmc_runtime.remote import RemoteComputer


def first_language(computer: ComputerLike) -> str | None:
    return computer.resolve("py")


class OnlyRuns:
    def run(self, language: str, code: str) -> None: ...


first_language(Computer())
first_language(RemoteComputer("http://127.0.0.1:9"))
first_language(OnlyRuns())  # refused
"""


def test_computer_and_remote_computer_type_check_as_computer_like(tmp_path: Path) -> None:
    """mypy (strict, the package's settings) takes a Computer and a RemoteComputer
    where a ComputerLike is wanted, and refuses an object that is not one."""
    uses = tmp_path / "uses.py"
    uses.write_text(USES)
    refused = 1 + USES.splitlines().index("first_language(OnlyRuns())  # refused")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-error-summary", str(uses)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, checked.stdout + checked.stderr
    assert errors[0].startswith(f"{uses}:{refused}:"), errors
    assert '"OnlyRuns"' in errors[0] and '"ComputerLike"' in errors[0], errors
