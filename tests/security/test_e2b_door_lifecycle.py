"""Attacks on a sandbox's life and on its id, through the E2B door: traffic
after a kill or a timeout, kills racing calls in flight, the lmc API and the
E2B API ending the same session, and the id (a bearer capability) leaking into
logs, the lmc API, the metrics or the transcripts."""

from __future__ import annotations

import ast
import concurrent.futures
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lmc_runtime.e2b.ids import SANDBOX_ID
from tests.integration.service.server import Server

from .e2b_door import (
    KEY,
    create,
    door_server,
    kill,
    marked_pids,
    traffic,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)

LMC = {"Authorization": f"Bearer {KEY}"}
E2B_PACKAGE = Path(__file__).resolve().parents[2] / "lmc_runtime" / "e2b"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with door_server("--max-sessions", "4") as server:
        yield server


def _session_of(server: Server, mark: str) -> str:
    """The lmc session of the sandbox whose envVars hold ``mark``."""
    for entry in httpx.get(server.url + "/v1/sessions", headers=LMC).json()["sessions"]:
        info = httpx.get(f"{server.url}/v1/sessions/{entry['id']}", headers=LMC).json()
        if "MARK" in info.get("env", []):
            run = httpx.post(
                f"{server.url}/v1/sessions/{entry['id']}/execute",
                json={
                    "role": "assistant",
                    "type": "code",
                    "format": "python",
                    "content": "import os; print(os.environ.get('MARK'))",
                },
                headers=LMC,
                timeout=120,
            )
            if mark in run.text:
                return str(entry["id"])
    raise AssertionError("the sandbox's session is not in the lmc API's list")


def _leave_a_process(server: Server, session_id: str) -> None:
    """A process of the session's that outlives the run that started it."""
    code = (
        "import subprocess\n"
        "subprocess.Popen(['sleep', '1000'], start_new_session=True,\n"
        "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print('left')"
    )
    run = httpx.post(
        f"{server.url}/v1/sessions/{session_id}/execute",
        json={"role": "assistant", "type": "code", "format": "python", "content": code},
        headers=LMC,
        timeout=120,
    )
    assert "left" in run.text, run.text


def _marked_sandbox(server: Server, **body: Any) -> tuple[str, str, str]:
    """A sandbox whose processes carry a mark of their own; (id, mark, lmc session)."""
    mark = "lmc-attack-" + secrets.token_hex(8)
    sandbox_id = create(server, envVars={"MARK": mark}, **body)["sandboxID"]
    session_id = _session_of(server, mark)
    _leave_a_process(server, session_id)
    assert marked_pids(mark), "the sandbox's processes were not found on the host"
    return sandbox_id, mark, session_id


def _gone_everywhere(server: Server, sandbox_id: str, mark: str) -> None:
    """Traffic gets a quick 502, the control plane a 404, and no process is left."""
    started = time.monotonic()
    response = traffic(server, sandbox_id, "/files")
    assert response.status_code == 502, response.text
    assert time.monotonic() - started < 5
    info = httpx.get(f"{server.url}/sandboxes/{sandbox_id}", headers={"X-API-Key": KEY})
    assert info.status_code == 404, info.text
    assert kill(server, sandbox_id).status_code == 404
    listed = httpx.get(f"{server.url}/v2/sandboxes", headers={"X-API-Key": KEY}).text
    assert sandbox_id not in listed
    wait_until(lambda: not marked_pids(mark), 15, "the sandbox's processes end")


def test_a_killed_sandbox_is_gone_with_its_processes(server: Server) -> None:
    sandbox_id, mark, _ = _marked_sandbox(server)
    assert kill(server, sandbox_id).status_code == 204
    _gone_everywhere(server, sandbox_id, mark)


def test_a_timed_out_sandbox_is_gone_with_its_processes(server: Server) -> None:
    sandbox_id, mark, _ = _marked_sandbox(server, timeout=30)
    assert (
        httpx.post(
            f"{server.url}/sandboxes/{sandbox_id}/timeout",
            json={"timeout": 1},
            headers={"X-API-Key": KEY},
        ).status_code
        == 204
    )
    wait_until(
        lambda: traffic(server, sandbox_id, "/files").status_code == 502,
        15,
        "the sandbox times out",
    )
    _gone_everywhere(server, sandbox_id, mark)


def test_deleting_its_session_through_the_lmc_api_ends_the_sandbox(server: Server) -> None:
    sandbox_id, mark, session_id = _marked_sandbox(server)
    refused = httpx.delete(f"{server.url}/v1/sessions/{session_id}")  # no token
    assert refused.status_code == 401
    assert traffic(server, sandbox_id, "/files").status_code != 502
    deleted = httpx.delete(f"{server.url}/v1/sessions/{session_id}", headers=LMC, timeout=60)
    assert deleted.status_code in (200, 204), deleted.text
    _gone_everywhere(server, sandbox_id, mark)


def test_a_kill_racing_calls_in_flight_never_500s(server: Server) -> None:
    """Kills (two at once), traffic and the lmc API's runs in the same moment."""
    sandbox_id, mark, session_id = _marked_sandbox(server)
    long_run = {
        "role": "assistant",
        "type": "code",
        "format": "python",
        "content": "import time\nfor i in range(600):\n    print(i, flush=True); time.sleep(0.05)",
    }

    def run() -> int:
        return httpx.post(
            f"{server.url}/v1/sessions/{session_id}/execute",
            json=long_run,
            headers=LMC,
            timeout=120,
        ).status_code

    def poke(_: int) -> int:
        return traffic(server, sandbox_id, "/files").status_code

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        running = pool.submit(run)
        pokes = [pool.submit(poke, i) for i in range(40)]
        kills = [pool.submit(lambda: kill(server, sandbox_id).status_code) for _ in range(2)]
        more = [pool.submit(poke, i) for i in range(40)]
        statuses = [f.result() for f in (*pokes, *more)]
        killed = sorted(f.result() for f in kills)
        assert running.result() in (200, 404, 409, 410)
    assert 500 not in statuses, statuses
    assert killed in ([204, 204], [204, 404]), killed
    _gone_everywhere(server, sandbox_id, mark)
    log = server.log()
    assert "Traceback" not in log, log[-3000:]


def test_ids_are_random_and_never_leak(server: Server) -> None:
    made = [create(server, secure=True, metadata={"n": str(i)}) for i in range(4)]
    ids = [m["sandboxID"] for m in made]
    tokens = [m["envdAccessToken"] for m in made]
    try:
        assert all(SANDBOX_ID.fullmatch(i) for i in ids)
        assert len(set(ids)) == len(ids) and len(set(tokens)) == len(tokens)
        # Errors and refusals name it; the 404 of another's prefix too.
        for sandbox_id in ids:
            httpx.post(
                f"{server.url}/sandboxes/{sandbox_id}/connect",
                json={"timeout": -1},
                headers={"X-API-Key": KEY},
            )
            httpx.get(f"{server.url}/sandboxes/{sandbox_id}x", headers={"X-API-Key": KEY})
            traffic(server, sandbox_id, "/files")
            traffic(server, sandbox_id, "/files", port=22)
        seen = [
            httpx.get(server.url + "/v1/sessions", headers=LMC).text,
            httpx.get(server.url + "/metrics", headers=LMC).text,
            httpx.get(server.url + "/healthz").text,
        ]
        for entry in httpx.get(server.url + "/v1/sessions", headers=LMC).json()["sessions"]:
            seen.append(httpx.get(f"{server.url}/v1/sessions/{entry['id']}", headers=LMC).text)
    finally:
        for sandbox_id in ids:
            kill(server, sandbox_id)
    seen.append(server.log())
    for path in (server.data_dir / "threads").rglob("*"):
        if path.is_file():
            seen.append(path.read_text(errors="replace"))
    for text in seen:
        for secret in (*ids, *tokens):
            assert secret not in text, text[:2000]


#: What names a sandbox's secret: its id and its tokens.
_SECRET_NAMES = {"sandbox_id", "access_token", "envd_access_token", "token"}


def _secret(node: ast.AST) -> bool:
    """Whether ``node`` is a sandbox's id (``sandbox.id``, ``sandbox_id``) or token."""
    if isinstance(node, ast.Attribute):
        owner = node.value.id if isinstance(node.value, ast.Name) else ""
        return node.attr in _SECRET_NAMES or (node.attr == "id" and "sandbox" in owner)
    return isinstance(node, ast.Name) and node.id in _SECRET_NAMES


def _plain(node: ast.AST) -> bool:
    """Whether ``node`` compares a secret with ``==``, ``!=`` or ``in`` (not with
    None), looks one up in a table, or keys a lasting table (``self.x[id] = ...``)
    by one."""
    if isinstance(node, ast.Compare):
        sides = (node.left, *node.comparators)
        return (
            any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops)
            and any(_secret(n) for n in sides)
            and not any(isinstance(n, ast.Constant) and n.value is None for n in sides)
        )
    if isinstance(node, ast.Subscript) and _secret(node.slice):
        return isinstance(node.ctx, ast.Load) or isinstance(node.value, ast.Attribute)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        receiver = node.func.value
        registry = isinstance(receiver, ast.Attribute) and receiver.attr == "sandboxes"
        lookup = node.func.attr in ("get", "pop", "setdefault") and not registry
        return lookup and bool(node.args) and _secret(node.args[0])
    return False


def test_ids_are_never_compared_or_keyed_plainly() -> None:
    """In the E2B package, a sandbox's id or token is compared with
    :func:`ids.same` and looked up by its digest: no ``==``/``!=``/``in`` on
    one, and no table keyed by one."""
    found = [
        f"{path.relative_to(E2B_PACKAGE)}:{getattr(node, 'lineno', '?')}"
        for path in sorted(E2B_PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if _plain(node)
    ]
    assert not found, f"plain comparisons or lookups of ids: {found}"
