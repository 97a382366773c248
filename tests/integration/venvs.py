"""Virtualenvs of their own for tests of software whose pins clash with this
project's environment (Open Interpreter, Enterprise Gateway), built once per
machine with pip and cached.

The cache is keyed by what goes in (a name, the Python, the requirements),
under ``$XDG_CACHE_HOME`` (``~/.cache``); a file lock keeps two test runs from
building the same one at once. A build that cannot reach the package index
skips the test that needed it; any other failure of pip fails it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

__all__ = ["cached_venv", "venv_dir"]

#: How long pip may take to build a virtualenv from an empty cache.
BUILD_TIMEOUT = 900.0
#: pip's words for an index it could not reach.
_OFFLINE = (
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "ConnectTimeoutError",
    "ProxyError",
    "Max retries exceeded",
)


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lmc-runtime-tests"


def venv_dir(name: str, requirements: Sequence[str]) -> Path:
    """Where the virtualenv ``name`` of ``requirements`` for this Python lives."""
    key = json.dumps([sys.version_info[:2], sorted(requirements)]).encode()
    digest = hashlib.sha256(key).hexdigest()[:12]
    python = f"py{sys.version_info[0]}{sys.version_info[1]}"
    return _cache_root() / f"{name}-{python}-{digest}"


def _pip_failed(what: str, done: subprocess.CompletedProcess[str]) -> None:
    text = done.stdout + done.stderr
    last = [line for line in text.splitlines() if line.strip()][-3:]
    if any(marker in text for marker in _OFFLINE):
        pytest.skip(
            f"cannot build {what}'s virtualenv: the package index is out of reach ({' / '.join(last)})"
        )
    pytest.fail(f"pip could not install {what}:\n{text[-4000:]}")


def _build(root: Path, what: str, requirements: Sequence[str]) -> None:
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "venv", str(root)], check=True, timeout=120, stdin=subprocess.DEVNULL
    )
    try:
        done = subprocess.run(
            [str(root / "bin" / "python"), "-m", "pip", "install", "--no-input", *requirements],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"pip did not build {what}'s virtualenv in {BUILD_TIMEOUT:.0f} s")
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        _pip_failed(what, done)


def cached_venv(name: str, requirements: Sequence[str], *, what: str) -> Path:
    """The Python of virtualenv ``name`` holding ``requirements`` (``what`` names
    it in messages), built first if it is not in the cache."""
    root = venv_dir(name, requirements)
    marker = root / "lmc-built.json"
    if not marker.exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        with open(root.parent / f"{root.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if not marker.exists():
                _build(root, what, requirements)
                marker.write_text(json.dumps(list(requirements)))
    return root / "bin" / "python"
