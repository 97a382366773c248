"""The wheel built from this checkout, and fresh virtualenvs with it installed.

The wheel is built once per test run (``conftest.py``'s ``wheel`` fixture) and
installed into each test module's own fresh virtualenv. A virtualenv is made
without a pip of its own (``python -m venv --without-pip``) and filled by this
interpreter's pip (``pip --python``): the same resolver and installer from the
same cache, minus the seconds ``ensurepip`` takes to put a pip in each one.
Nothing of lmc-runtime runs pip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: This interpreter's pip, as the tests drive it.
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def checked(args: list[str], cwd: Path) -> None:
    """Run ``args`` in ``cwd``; fail with the end of what it said unless it exits 0."""
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_NO_CACHE_DIR", "PYTHONPATH")}
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=600, check=False, cwd=cwd, env=env
    )
    assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])


def build_wheel(dist: Path) -> Path:
    """The checkout's wheel, built into ``dist`` as ``pip wheel`` builds it."""
    checked([*PIP, "wheel", "-q", "--no-deps", "-w", str(dist), str(REPO)], dist)
    (wheel,) = dist.glob("lmc_runtime-*.whl")
    return wheel


def venv_pip(venv: Path) -> list[str]:
    """pip, acting on the virtualenv ``venv`` (which has none of its own)."""
    return [*PIP, "--python", str(venv / "bin" / "python")]


def fresh_venv(venv: Path, requirement: str, cwd: Path) -> None:
    """A new virtualenv at ``venv`` with ``requirement`` (the wheel, with extras or
    not) and what it depends on installed, resolved by pip from ``cwd``."""
    checked([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd)
    checked([*venv_pip(venv), "install", "-q", requirement], cwd)
