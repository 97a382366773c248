"""``Computer.start``/``astart``: an interpreter started ahead of the first run,
without running code in it (a warm pool uses it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime import Computer
from lmc_runtime.errors import UsageError


def test_start_runs_no_code_so_the_first_run_is_execution_one(tmp_path: Path) -> None:
    """Regression: a warm-up run of ``pass`` made the user's first run report
    execution_count 2."""
    with Computer(cwd=tmp_path) as computer:
        computer.start("py")  # an alias resolves
        replies = list(computer.run("python", "print(41 + 1)", timeout=60))
    final = replies[-1]
    assert final.status == "ok", replies
    assert (final.extras or {}).get("execution_count") == 1, final
    assert "42" in "".join(str(m.content) for m in replies if m.format == "output")


def test_start_of_an_unknown_language_is_misuse(tmp_path: Path) -> None:
    with Computer(cwd=tmp_path) as computer, pytest.raises(UsageError, match="cobol"):
        computer.start("cobol")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_astart_needs_an_open_computer(anyio_backend: str) -> None:
    with pytest.raises(UsageError, match="open the Computer first"):
        await Computer().astart("python")
