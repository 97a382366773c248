"""E2B's JS SDK (``@e2b/code-interpreter``) against a real ``lmc serve``, run by
node. The set-up installs the SDK with npm from the lock file beside the script,
as ``lmc setup`` installs TypeScript."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lmc_runtime.sysdeps import ensure_node_packages, missing_node_packages
from tests.integration.service.server import Server

from .conftest import E2B_TOKEN

pytestmark = pytest.mark.timeout(600)

HERE = Path(__file__).parent / "js"


@pytest.fixture(scope="module")
def js_sdk() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for E2B's JS SDK")
    lines: list[str] = []
    if missing_node_packages(HERE):
        ensure_node_packages(HERE, needed_for="E2B's JS SDK", say=lines.append)
    assert not missing_node_packages(HERE), "\n".join(lines)
    return HERE


def test_the_js_sdk_runs_code_files_and_commands_unchanged(
    js_sdk: Path, e2b_server: Server
) -> None:
    env = {
        **os.environ,
        "E2B_API_KEY": E2B_TOKEN,
        "E2B_API_URL": e2b_server.url,
        "E2B_SANDBOX_URL": e2b_server.url,
    }
    env.pop("E2B_DOMAIN", None)
    done = subprocess.run(
        ["node", "drive.mjs"], cwd=js_sdk, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["text"] == "42"
    assert seen["stdout"] == ["out\n"]
    assert seen["stderr"] == ["err\n"]
    assert ["stdout", "out\n"] in seen["streamed"]
    assert seen["error"] == {"name": "ZeroDivisionError", "value": "division by zero"}
    assert seen["js"] == "2,4,6"
    assert seen["read"] == "from js"
    assert "note.txt" in seen["listed"]
    assert seen["command"] == {"stdout": "42\n/home/user\nuser\n", "exitCode": 0}
    assert seen["running"] is True
    assert seen["listedAfterKill"] is False
