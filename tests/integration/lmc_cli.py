"""Running the ``lmc`` command in a subprocess, with some packages made uninstalled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: A sitecustomize that makes the packages named in $LMC_TEST_BLOCK impossible to import,
#: as if they were not installed.
BLOCKER = """\
import os
import sys
from importlib.abc import MetaPathFinder

_BLOCKED = frozenset(filter(None, os.environ.get("LMC_TEST_BLOCK", "").split(",")))


class _NotInstalled(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""

#: The top-level packages only the extras bring. (prompt_toolkit and Pygments come
#: with IPython, which ipykernel needs, so a kernel cannot start without them.)
EXTRA_ONLY_PACKAGES = (
    "fastapi",
    "starlette",
    "uvicorn",
    "websockets",
    "httpx",
    "rich",
    "matplotlib",
    "numpy",
)


def blocking_env(tmp_path: Path, *packages: str) -> dict[str, str]:
    """The environment of a Python process in which ``packages`` cannot be imported."""
    site = tmp_path / "blocker"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), str(REPO), env.get("PYTHONPATH")]))
    env["LMC_TEST_BLOCK"] = ",".join(packages)
    return env


def python_without(tmp_path: Path, code: str, *blocked: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` from the checkout, in a process that cannot import ``blocked``."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
        env=blocking_env(tmp_path, *blocked),
    )


def import_without(tmp_path: Path, blocked: str, module: str) -> str:
    """What importing ``module`` says, in a process that cannot import ``blocked``:
    ``True <text>`` when it raises MissingExtra (an ImportError) with that text."""
    code = (
        "from lmc_runtime.errors import MissingExtra\n"
        f"try:\n    import {module}\n"
        "except MissingExtra as exc:\n    print(isinstance(exc, ImportError), exc)\n"
        "else:\n    print('imported')\n"
    )
    done = python_without(tmp_path, code, blocked)
    assert done.returncode == 0, done.stderr
    return done.stdout


def lmc(
    *args: str,
    stdin: str = "",
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python -m lmc_runtime ARGS`` from the repository root, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "lmc_runtime", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=REPO,
        env=env,
    )
