"""The TypeScript backend: what it needs to run, and how it tells the runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmc_runtime.backends import typescript
from lmc_runtime.backends.typescript import TypeScriptBackend, node_packages_dir, typescript_dir


def test_without_the_typescript_package_it_says_to_run_lmc_setup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(typescript, "typescript_dir", lambda: tmp_path / "typescript")
    monkeypatch.setattr(TypeScriptBackend, "node", lambda self: "/usr/bin/node")
    availability = TypeScriptBackend().availability()
    assert not availability.available
    reason = availability.reason or ""
    assert "\n" not in reason and "`lmc setup`" in reason and "typescript" in reason


def test_with_the_package_installed_it_is_available(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "typescript").mkdir()
    (tmp_path / "typescript" / "package.json").write_text('{"version": "5.9.3"}')
    monkeypatch.setattr(typescript, "typescript_dir", lambda: tmp_path / "typescript")
    monkeypatch.setattr(TypeScriptBackend, "node", lambda self: "/usr/bin/node")
    assert TypeScriptBackend().availability().available


def test_without_node_the_reason_is_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TypeScriptBackend, "node", lambda self: None)
    reason = TypeScriptBackend().availability().reason or ""
    assert "node is not installed" in reason


def test_the_runner_is_told_the_language_and_where_the_compiler_is() -> None:
    env = TypeScriptBackend().runner_env()
    assert env["LMC_NODE_LANGUAGE"] == "typescript"
    assert env["LMC_TYPESCRIPT"] == str(typescript_dir())
    assert typescript_dir().parent == node_packages_dir() / "node_modules"


def test_the_shipped_lock_pins_a_typescript_with_transpile_module() -> None:
    lock = json.loads((node_packages_dir() / "package-lock.json").read_text())
    version = lock["packages"]["node_modules/typescript"]["version"]
    # TypeScript 7 (the native compiler) has no transpileModule.
    assert int(version.split(".")[0]) < 7
    manifest = json.loads((node_packages_dir() / "package.json").read_text())
    assert manifest["dependencies"]["typescript"] == version
