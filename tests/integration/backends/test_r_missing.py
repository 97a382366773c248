"""When R cannot be found, `languages` says so and an R message gets a clear reply."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime import Computer
from lmc_runtime.backends import BackendEntry, Registry
from lmc_runtime.backends.r import RBackend

from ..conftest import run

INSTALL = "R is not installed: apt-get install r-base-core r-cran-irkernel"


def test_a_backend_whose_path_has_no_r_is_unavailable_with_the_install_command(
    tmp_path: Path,
) -> None:
    registry = Registry([])
    registry.add(BackendEntry("r", "unused:unused", ("R",)), RBackend(path=str(tmp_path)))
    with Computer(registry=registry) as computer:
        status = computer.languages["r"]
        result = run(computer, "1 + 1", "r")
    assert not status.available and status.reason == INSTALL
    (reply,) = result.messages
    assert INSTALL in reply.content
    assert reply.extras["status"] == "unavailable"  # type: ignore[index]


def test_the_default_backend_follows_the_process_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with Computer() as computer:
        assert computer.languages["r"].reason == INSTALL
        result = run(computer, 'cat("x")', "R")
    assert INSTALL in result.output
