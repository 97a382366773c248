"""E2B's SDKs pointed at a running ``lmc serve`` by their environment
variables alone (``E2B_API_URL``, ``E2B_SANDBOX_URL``, ``E2B_API_KEY``), as a
user of E2B would point them; shared by the integration and security tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.sysdeps import ensure_node_packages, missing_node_packages
from tests.integration.service.server import Server
from tests.integration.venvs import cached_venv

#: The server's token, in the shape E2B's SDKs check a key for.
E2B_TOKEN = "e2b_" + "0123456789abcdef" * 2 + "01234567"


def point_sdks_at(server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    """Set the SDKs' environment to ``server`` (for the test only) and return it."""
    monkeypatch.setenv("E2B_API_KEY", E2B_TOKEN)
    monkeypatch.setenv("E2B_API_URL", server.url)
    monkeypatch.setenv("E2B_SANDBOX_URL", server.url)
    monkeypatch.delenv("E2B_DOMAIN", raising=False)
    monkeypatch.delenv("E2B_ACCESS_TOKEN", raising=False)
    return server


@contextmanager
def sdk_sandbox(cls: Any, timeout: int = 120) -> Iterator[Any]:
    """A sandbox made by ``cls.create`` (E2B's or the code interpreter's
    ``Sandbox``), killed on the way out."""
    sandbox = cls.create(timeout=timeout)
    try:
        yield sandbox
    finally:
        sandbox.kill()


#: The older SDKs: the releases E2B's stored public test suites match.
OLD_SDKS = ("e2b==2.45.1", "e2b-code-interpreter==2.9.2")


def old_sdk_python() -> Path:
    """The Python of a virtualenv of :data:`OLD_SDKS`, built with pip on first use
    and cached (skips the test when the package index is out of reach)."""
    return cached_venv("e2b-old-sdks", OLD_SDKS, what="the older E2B SDKs")


#: Where E2B's JS SDK is installed, from the lock file there.
JS_SDK = Path(__file__).parent / "js"


def js_sdk_folder() -> Path:
    """``JS_SDK``, its packages installed (the test is skipped without node and npm)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for E2B's JS SDK")
    lines: list[str] = []
    if missing_node_packages(JS_SDK):
        ensure_node_packages(JS_SDK, needed_for="E2B's JS SDK", say=lines.append)
    assert not missing_node_packages(JS_SDK), "\n".join(lines)
    return JS_SDK


def run_sdk_script(argv: list[str], *, timeout: float, cwd: Path | None = None) -> Any:
    """Run an SDK's script in its own process, in this process's environment (the
    SDKs pointed at the server by ``point_sdks_at``) but for this checkout's
    ``PYTHONPATH``; what it saw, the JSON object on its last line of output."""
    done = subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
