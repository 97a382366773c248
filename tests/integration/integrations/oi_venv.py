"""A virtualenv with Open Interpreter, built once per machine for the tests that drive it.

Open Interpreter pins versions that clash with this project's environment, so it
lives in a virtualenv of its own: ``open-interpreter``, lmc-runtime's core
dependencies and its ``[client]`` extra, resolved together by pip. The checkout
itself is not installed there: the scripts run with it on ``PYTHONPATH``, next to
its metadata (:func:`checkout_metadata`: its entry points, which name the kernel
provisioner), so one cached virtualenv serves every checkout and none changes it. The cache is keyed by what goes in (OI's
version, the Python, the requirements), under ``$XDG_CACHE_HOME`` (``~/.cache``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

OI_VERSION = "0.4.3"
REPO = Path(__file__).resolve().parents[3]
#: How long pip may take to build the virtualenv from an empty cache.
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


def requirements() -> list[str]:
    """Open Interpreter, lmc-runtime's core dependencies and its [client] extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    client = project["optional-dependencies"]["client"]
    return [f"open-interpreter=={OI_VERSION}", *project["dependencies"], *client]


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lmc-runtime-tests"


def venv_dir() -> Path:
    """Where the virtualenv for these requirements and this Python lives."""
    key = json.dumps([sys.version_info[:2], sorted(requirements())]).encode()
    digest = hashlib.sha256(key).hexdigest()[:12]
    python = f"py{sys.version_info[0]}{sys.version_info[1]}"
    return _cache_root() / f"open-interpreter-{OI_VERSION}-{python}-{digest}"


def _pip_failed(done: subprocess.CompletedProcess[str]) -> None:
    text = done.stdout + done.stderr
    last = [line for line in text.splitlines() if line.strip()][-3:]
    if any(marker in text for marker in _OFFLINE):
        pytest.skip(
            f"cannot build Open Interpreter's virtualenv: the package index is out of reach ({' / '.join(last)})"
        )
    pytest.fail(f"pip could not install Open Interpreter {OI_VERSION}:\n{text[-4000:]}")


def _build(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "venv", str(root)], check=True, timeout=120, stdin=subprocess.DEVNULL
    )
    try:
        done = subprocess.run(
            [str(root / "bin" / "python"), "-m", "pip", "install", "--no-input", *requirements()],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"pip did not build Open Interpreter's virtualenv in {BUILD_TIMEOUT:.0f} s")
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        _pip_failed(done)


def open_interpreter_python() -> Path:
    """The Python of the virtualenv, built first if it is not in the cache (a
    file lock keeps two test runs from building it at once)."""
    root = venv_dir()
    marker = root / "lmc-built.json"
    if not marker.exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        with open(root.parent / f"{root.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if not marker.exists():
                _build(root)
                marker.write_text(json.dumps(requirements()))
    return root / "bin" / "python"


def checkout_metadata(dest: Path) -> Path:
    """A folder holding the checkout's installed metadata (``lmc_runtime-V.dist-info``
    with its entry points, from pyproject.toml), as installing it would write."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    init = (REPO / "lmc_runtime" / "__init__.py").read_text()
    found = re.search(r"^__version__ = \"([^\"]+)\"", init, re.MULTILINE)
    assert found, "lmc_runtime/__init__.py has no __version__"
    info = dest / f"lmc_runtime-{found[1]}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {found[1]}\n"
    )
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
            for group, points in groups.items()
        )
    )
    return dest


def script_env(metadata: Path, **extra: str) -> dict[str, str]:
    """The environment of a script in the virtualenv: this checkout importable with
    its ``metadata`` folder, and OI kept off the network (no model cost map
    download, no telemetry)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(metadata)])
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["DISABLE_TELEMETRY"] = "true"
    env.update(extra)
    return env
