"""Without the [client] extra, the client SDK and --remote say in one line what to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ..lmc_cli import REPO, blocking_env, lmc

LINE = "lmc_runtime.remote needs the [client] extra: pip install 'lmc-runtime[client]'"


@pytest.mark.parametrize("blocked", ["httpx", "websockets"])
def test_importing_the_client_without_its_extra_raises_missing_extra(
    tmp_path: Path, blocked: str
) -> None:
    code = (
        "from lmc_runtime.errors import MissingExtra\n"
        "try:\n    import lmc_runtime.remote\n"
        "except MissingExtra as exc:\n    print(isinstance(exc, ImportError), exc)\n"
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
    assert done.stdout == f"True {LINE}\n"


def test_lmc_run_remote_without_the_extra_says_what_to_install(tmp_path: Path) -> None:
    done = lmc("run", "--remote", "http://127.0.0.1:9", env=blocking_env(tmp_path, "websockets"))
    assert done.returncode == 2
    assert done.stderr == LINE + "\n" and done.stdout == ""
