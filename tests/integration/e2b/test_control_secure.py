"""Secure sandboxes through E2B's SDKs: ``secure=True`` (the older SDK's
choice; the newer one's ``/v2/sandboxes`` always is) gives an envd access
token; files, commands and ``run_code`` work with it, and nothing reaches the
sandbox without it. ``--e2b-require-secure`` refuses the others, and the older
SDK's whole control plane (list, metrics, pause, connect) runs too."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import httpx
import pytest
from e2b_code_interpreter import Sandbox

from tests.integration.e2b.conftest import E2B_TOKEN
from tests.integration.e2b.sdk_env import old_sdk_python
from tests.integration.service.server import Server, running_server

pytestmark = pytest.mark.timeout(300)


#: The older SDK, secure or not as argv[1] says; one JSON line of what it saw.
OLD_SCRIPT = """
import json, sys
from e2b import SandboxQuery
from e2b_code_interpreter import Sandbox
sbx = Sandbox.create(timeout=120, secure=sys.argv[1] == "secure", metadata={"sdk": "old"})
try:
    seen = {"token": sbx._envd_access_token is not None, "id": sbx.sandbox_id}
    seen["code"] = sbx.run_code("6 * 7").text
    seen["echo"] = sbx.commands.run("echo hi").stdout.strip()
    sbx.files.write("a.txt", "secure")
    seen["file"] = sbx.files.read("a.txt")
    seen["listed"] = [s.sandbox_id for s in Sandbox.list(query=SandboxQuery(metadata={"sdk": "old"}))
                      .next_items()] == [sbx.sandbox_id]
    seen["metrics"] = len(sbx.get_metrics()) >= 1
    sbx.beta_pause() if hasattr(sbx, "beta_pause") else sbx.pause()
    seen["paused"] = sbx.get_info().state.value
    sbx = Sandbox.connect(sbx.sandbox_id, timeout=60)
    seen["resumed"] = sbx.get_info().state.value
    seen["after"] = sbx.run_code("6 * 7").text
finally:
    sbx.kill()
print(json.dumps(seen))
"""


def _old_sdk(server: Server, secure: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("E2B_")}
    env.update(E2B_API_KEY=E2B_TOKEN, E2B_API_URL=server.url, E2B_SANDBOX_URL=server.url)
    return subprocess.run(
        [str(old_sdk_python()), "-c", OLD_SCRIPT, "secure" if secure else "open"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )


def _seen(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _without_token(server: Server, sandbox_id: str, token: str | None = None) -> list[int]:
    """What envd and the interpreter answer a request that lacks (or has) the token."""
    statuses = []
    for port, method, path, body in (
        (49983, "POST", "/filesystem.Filesystem/ListDir", {"path": "/home/user"}),
        (49983, "GET", "/files?path=a.txt", None),
        (49999, "POST", "/execute", {"code": "1"}),
    ):
        headers = {"E2b-Sandbox-Id": sandbox_id, "E2b-Sandbox-Port": str(port)}
        headers["Content-Type"] = "application/json"
        if token is not None:
            headers["X-Access-Token"] = token
        answer = httpx.request(method, server.url + path, headers=headers, json=body, timeout=60)
        statuses.append(answer.status_code)
    return statuses


def test_the_newer_sdks_sandbox_works_with_its_token_and_nothing_without(
    e2b_env: Server,
) -> None:
    sbx = Sandbox.create(timeout=120)
    try:
        token = sbx._envd_access_token
        assert token
        assert sbx.run_code("6 * 7").text == "42"
        assert sbx.commands.run("echo hi").stdout.strip() == "hi"
        sbx.files.write("a.txt", "secure")
        assert sbx.files.read("a.txt") == "secure"
        assert _without_token(e2b_env, sbx.sandbox_id) == [401, 401, 401]
        assert _without_token(e2b_env, sbx.sandbox_id, token[::-1]) == [401, 401, 401]
    finally:
        sbx.kill()


@pytest.mark.parametrize("secure", [True, False])
def test_the_older_sdk_runs_secure_or_not(e2b_env: Server, secure: bool) -> None:
    seen = _seen(_old_sdk(e2b_env, secure))
    assert seen.pop("token") is secure
    seen.pop("id")
    assert seen == {
        "code": "42",
        "echo": "hi",
        "file": "secure",
        "listed": True,
        "metrics": True,
        "paused": "paused",
        "resumed": "running",
        "after": "42",
    }


@pytest.fixture(scope="module")
def secure_only() -> Iterator[Server]:
    with running_server("--pool-size", "1", "--e2b-require-secure", token=E2B_TOKEN) as server:
        yield server


def test_a_server_that_requires_secure_sandboxes_refuses_others(secure_only: Server) -> None:
    refused = _old_sdk(secure_only, secure=False)
    assert refused.returncode != 0
    assert "secure=True" in refused.stderr
    seen = _seen(_old_sdk(secure_only, secure=True))
    assert seen["token"] is True and seen["code"] == "42"
