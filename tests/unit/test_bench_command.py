"""lmc bench finds the repository's benchmarks/ folder, or says in one line how to get it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime.cli import main
from lmc_runtime.cli.bench import BENCHMARKS_ENV, NOT_FOUND, benchmarks_dir

REPO = Path(__file__).resolve().parents[2]


def test_a_checkout_installed_editable_finds_its_benchmarks_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Guards the default: the benchmarks/ folder beside the package's own folder."""
    monkeypatch.delenv(BENCHMARKS_ENV, raising=False)
    assert benchmarks_dir(None) == REPO / "benchmarks"


def test_an_installed_package_without_the_folder_beside_it_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards a wheel's install: site-packages holds no benchmarks, none is made up."""
    monkeypatch.delenv(BENCHMARKS_ENV, raising=False)
    (tmp_path / "lmc_runtime").mkdir()
    (tmp_path / "benchmarks").mkdir()  # a folder of that name, but not the benchmarks
    assert benchmarks_dir(None, package=tmp_path / "lmc_runtime") is None
    assert "--benchmarks DIR" in NOT_FOUND and BENCHMARKS_ENV in NOT_FOUND


@pytest.mark.parametrize("how", ["option", "variable"])
def test_a_folder_without_benchmarks_is_refused_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    """Guards --benchmarks DIR and $LMC_BENCHMARKS: a wrong folder exits 2, naming it."""
    monkeypatch.delenv(BENCHMARKS_ENV, raising=False)
    args = ["bench", "--quick"]
    if how == "option":
        args += ["--benchmarks", str(tmp_path)]
    else:
        monkeypatch.setenv(BENCHMARKS_ENV, str(tmp_path))
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"lmc bench: {tmp_path} holds no benchmarks (no bench/command.py)\n"
