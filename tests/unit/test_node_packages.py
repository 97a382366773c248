"""`lmc setup` installs the runner's npm packages (typescript) with npm ci, readable by all."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from lmc_runtime import sysdeps
from lmc_runtime.sysdeps import ensure_node_packages, missing_node_packages, readable_by_all

LOCK = {
    "name": "pkgs",
    "lockfileVersion": 3,
    "packages": {
        "": {"dependencies": {"typescript": "5.9.3"}},
        "node_modules/typescript": {"version": "5.9.3"},
        "node_modules/only-for-dev": {"version": "1.0.0", "dev": True},
        # npm leaves out an optional package this node cannot take (E2B's JS SDK
        # pins one for node 22 only): it is not missing.
        "node_modules/for-newer-node": {"version": "8.0.0", "optional": True},
    },
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "package-lock.json").write_text(json.dumps(LOCK))
    return tmp_path


def install(folder: Path, version: str = "5.9.3") -> None:
    package = folder / "node_modules" / "typescript"
    package.mkdir(parents=True, exist_ok=True)
    (package / "package.json").write_text(json.dumps({"version": version}))


def test_missing_packages_are_what_the_lock_pins_and_node_modules_lacks(folder: Path) -> None:
    assert missing_node_packages(folder) == {"typescript": "5.9.3"}
    install(folder, "5.0.0")
    assert missing_node_packages(folder) == {"typescript": "5.9.3"}
    install(folder)
    assert missing_node_packages(folder) == {}


def test_present_packages_mean_nothing_is_run(folder: Path) -> None:
    install(folder)
    said: list[str] = []
    ran: list[list[str]] = []
    ok = ensure_node_packages(
        folder, needed_for="TypeScript", say=said.append, run=lambda a, c: ran.append(a) or 0
    )
    assert ok and ran == [] and "present" in said[0]


def test_it_runs_npm_ci_in_the_folder_and_opens_the_tree_to_everyone(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sysdeps.shutil, "which", lambda name: f"/usr/bin/{name}")
    calls: list[tuple[list[str], Path]] = []

    def npm(argv: list[str], cwd: Path) -> int:
        calls.append((argv, cwd))
        install(cwd)
        (cwd / "node_modules" / "typescript").chmod(0o700)
        (cwd / "node_modules" / "typescript" / "package.json").chmod(0o600)
        return 0

    said: list[str] = []
    assert ensure_node_packages(folder, needed_for="TypeScript", say=said.append, run=npm)
    assert calls == [(calls[0][0], folder)]
    assert calls[0][0][:2] == ["/usr/bin/npm", "ci"] and "--ignore-scripts" in calls[0][0]
    assert "typescript@5.9.3" in said[0] and "TypeScript" in said[0]
    package = folder / "node_modules" / "typescript"
    assert stat.S_IMODE(package.stat().st_mode) == 0o755
    assert stat.S_IMODE((package / "package.json").stat().st_mode) == 0o644


def test_without_npm_it_says_so_in_one_line(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sysdeps.shutil, "which", lambda name: None)
    said: list[str] = []
    assert not ensure_node_packages(folder, needed_for="TypeScript", say=said.append)
    assert len(said) == 1 and "npm" in said[0] and "typescript@5.9.3" in said[0]


def test_a_failed_npm_is_reported_not_raised(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sysdeps.shutil, "which", lambda name: f"/usr/bin/{name}")
    said: list[str] = []
    ok = ensure_node_packages(folder, needed_for="TypeScript", say=said.append, run=lambda a, c: 1)
    assert not ok and "failed (exit 1)" in said[-1] and "TypeScript" in said[-1]


def test_a_folder_without_a_lock_is_reported(tmp_path: Path) -> None:
    said: list[str] = []
    assert not ensure_node_packages(tmp_path, needed_for="TypeScript", say=said.append)
    assert "package-lock.json" in said[0]


def test_readable_by_all_leaves_links_alone(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir(mode=0o700)
    tool = tmp_path / "bin" / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o700)
    (tmp_path / "link").symlink_to(tool)
    readable_by_all(tmp_path)
    assert stat.S_IMODE(tool.stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "bin").stat().st_mode) == 0o755
