"""E2B's JS SDK (``@e2b/code-interpreter``) against a real ``lmc serve``, run by
node. The set-up installs the SDK with npm from the lock file beside the script,
as ``lmc setup`` installs TypeScript."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.service.server import Server

from .sdk_env import js_sdk_folder, run_sdk_script

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def js_sdk() -> Path:
    return js_sdk_folder()


def test_the_js_sdk_runs_code_files_and_commands_unchanged(js_sdk: Path, e2b_env: Server) -> None:
    seen = run_sdk_script(["node", "drive.mjs"], timeout=300, cwd=js_sdk)
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
