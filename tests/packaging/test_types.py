"""What mypy says of the package's public types, checked by running it."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

#: Code typed against ComputerLike and a filter's Run; each line mypy must refuse, and
#: only those, ends with ``# refused``.
USES = """\
from lmc_runtime import Computer, ComputerLike
from lmc_runtime.filters import FilterHost, Run
from lmc_runtime.remote import RemoteComputer


def first_language(computer: ComputerLike) -> str | None:
    return computer.resolve("py")


class OnlyRuns:
    def run(self, language: str, code: str) -> None: ...


first_language(Computer())
first_language(RemoteComputer("http://127.0.0.1:9"))
first_language(OnlyRuns())  # refused


async def stop_and_start_over(run: Run) -> FilterHost:
    await run.computer.ainterrupt(run.language)
    await run.computer.astart(run.language)
    await run.computer.arestart_all()
    return run.computer


def reach_past_the_host(run: Run) -> None:
    run.computer.close()  # refused
"""


def test_computers_and_filter_hosts_type_check(tmp_path: Path) -> None:
    """mypy (strict, the package's settings) takes a Computer and a RemoteComputer
    where a ComputerLike is wanted and refuses an object that is not one, and lets
    a filter call its host's three methods but nothing else of the Computer."""
    # A module name of its own: mypy's cache (the repository's) keys a module by name
    # and, for unchanged code, replays its errors under the path it had in an earlier run.
    uses = tmp_path / f"uses_{uuid.uuid4().hex}.py"
    uses.write_text(USES)
    refused = [n for n, line in enumerate(USES.splitlines(), 1) if line.endswith("# refused")]
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-error-summary", str(uses)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert [int(line.split(":")[1]) for line in errors] == refused, checked.stdout + checked.stderr
    assert all(line.startswith(f"{uses}:") for line in errors), errors
    assert '"OnlyRuns"' in errors[0] and '"ComputerLike"' in errors[0], errors
    assert '"FilterHost" has no attribute "close"' in errors[1], errors
