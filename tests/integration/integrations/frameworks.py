"""What the framework integrations' tests share: importing an integration in a
Python process where its framework is not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..lmc_cli import REPO, blocking_env


def import_without(tmp_path: Path, blocked: str, module: str) -> str:
    """What importing ``module`` says, in a process that cannot import ``blocked``:
    ``True <text>`` when it raises MissingExtra (an ImportError) with that text."""
    code = (
        "from lmc_runtime.errors import MissingExtra\n"
        f"try:\n    import {module}\n"
        "except MissingExtra as exc:\n    print(isinstance(exc, ImportError), exc)\n"
        "else:\n    print('imported')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
        env=blocking_env(tmp_path, blocked),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def install_line(module: str, extra: str) -> str:
    """What :func:`import_without` prints for an integration missing its extra."""
    return (
        f"True lmc_runtime.integrations.{module} needs the [{extra}] extra: "
        f"pip install 'lmc-runtime[{extra}]'\n"
    )
