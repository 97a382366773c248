"""The guard as a filter of a plain Computer: a clean run goes by untouched, a limit
rewrites the final status, and a process limit starts the interpreters over."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime import Computer
from lmc_runtime.backends import BackendEntry, Registry
from lmc_runtime.budget.filter import BudgetFilter
from lmc_runtime.replies import Status
from lmc_runtime.sandbox import SandboxComputer
from lmc_runtime.sandbox.computer import GuardFilter, sandbox_computer
from lmc_runtime.sandbox.disk import WorkDisk
from lmc_runtime.sandbox.guard import Guard
from lmc_runtime.sandbox.policy import SessionLimits

from ...fakes import ScriptedBackend


class Reaper:
    def __init__(self) -> None:
        self.calls = 0

    async def kill_leftovers(self) -> None:
        self.calls += 1


def _guarded(tmp_path: Path) -> tuple[Computer, ScriptedBackend, Reaper]:
    disk = WorkDisk(tmp_path / "disk", tmp_path / "disk.img", 1 << 20)
    disk.path.mkdir()
    reaper = Reaper()
    guard = Guard(SessionLimits(processes=64), None, disk, reaper=reaper)
    backend = ScriptedBackend()
    registry = Registry([])
    registry.add(BackendEntry("fake", "tests.fakes:ScriptedBackend", ()), backend)
    return sandbox_computer(guard, registry=registry), backend, reaper


def test_the_sandbox_computer_is_a_computer_with_the_budget_and_the_guard(
    tmp_path: Path,
) -> None:
    computer, _, _ = _guarded(tmp_path)
    assert type(computer) is Computer and SandboxComputer is sandbox_computer
    assert [type(f) for f in computer.filters] == [BudgetFilter, GuardFilter]


def test_a_clean_run_goes_by_untouched(tmp_path: Path) -> None:
    computer, backend, reaper = _guarded(tmp_path)
    with computer:
        messages = list(computer.run("fake", "print a"))
    assert [m.content for m in messages] == ["a\n", None]
    assert messages[-1].extras == {"status": "ok"}
    assert reaper.calls == 0 and len(backend.sessions) == 1


def test_a_process_limit_restarts_the_interpreters_and_says_so(tmp_path: Path) -> None:
    computer, backend, reaper = _guarded(tmp_path)
    with computer:
        messages = list(computer.run("fake", "print bash: fork: retry: no more"))
        after = list(computer.run("fake", "print again"))
    notice, final = messages[-2], messages[-1]
    assert notice.status == Status.PROCESS_LIMIT and "session restarted" in notice.content
    assert final.is_final and final.extras == {
        "status": "process_limit",
        "ended": "ok",
        "limits": ["process_limit"],
        "state_lost": True,
    }
    # The first interpreter was stopped, what it left reaped, and a new one started.
    assert backend.sessions[0].closed and reaper.calls == 1
    assert len(backend.sessions) == 2 and [m.content for m in after] == ["again\n", None]
    assert backend.sessions[1].executed[0][0] == "print again"


@pytest.mark.parametrize("code", ["line 1\nprint a", "crash boom"])
def test_every_run_ends_with_one_final_message(tmp_path: Path, code: str) -> None:
    computer, _, _ = _guarded(tmp_path)
    with computer:
        messages = list(computer.run("fake", code))
    assert [m.is_final for m in messages].count(True) == 1 and messages[-1].is_final
