"""Attacks through E2B's code interpreter (``/execute``, ``/contexts``): a second
door into the same sandbox, held as the lmc API holds its own.

A context's code runs in its sandbox, as its user, in its cgroup, under every
limit of the session (memory, processes, wall time, output); a context of one
sandbox is out of another's reach; contexts are capped, a flood of creations
included; bodies are bounded (413) and checked (4xx, never a 500); a context's
``cwd`` is made without following the links code plants; and nothing of a
context outlives its sandbox.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2b import NotFoundException, SandboxException
from e2b_code_interpreter import Sandbox

from tests.integration.e2b.sdk_env import E2B_TOKEN, point_sdks_at, sdk_sandbox
from tests.integration.service.server import Server, running_server
from tests.waiters import process_ended

pytestmark = pytest.mark.timeout(300)

OUTPUT_BYTES = 1 << 20


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with running_server(
        "--pool-size",
        "1",
        "--processes",
        "64",
        "--memory",
        "512M",
        "--output-bytes",
        str(OUTPUT_BYTES),
        "--wall-seconds",
        "20",
        token=E2B_TOKEN,
    ) as server:
        yield server


@pytest.fixture
def env(server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    return point_sdks_at(server, monkeypatch)


@pytest.fixture
def sbx(env: Server) -> Iterator[Sandbox]:
    with sdk_sandbox(Sandbox) as sandbox:
        yield sandbox


def _headers(sandbox: Sandbox) -> dict[str, str]:
    headers = {"E2b-Sandbox-Id": sandbox.sandbox_id, "E2b-Sandbox-Port": "49999"}
    token = getattr(sandbox, "_envd_access_token", None)
    if token:
        headers["X-Access-Token"] = token
    return headers


def _post(
    server: Server, sandbox: Sandbox, path: str, headers: dict[str, str] | None = None, **kw: Any
) -> httpx.Response:
    sent = {**_headers(sandbox), **(headers or {})}
    return httpx.post(f"{server.url}{path}", headers=sent, timeout=60, **kw)


def _marker() -> str:
    return f"{secrets.randbelow(10**6) + 10**6}.{secrets.randbelow(1000):03d}"


def _sleepers(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.split(b"\0")[:2] == [b"sleep", marker.encode()]:
                found.append(int(entry))
    return found


def _start_sleeper(sandbox: Sandbox, context: Any, marker: str) -> int:
    """A ``sleep MARKER`` started by code in ``context``; its host pid."""
    code = f"import subprocess\np = subprocess.Popen(['sleep', '{marker}'])\np.pid"
    assert sandbox.run_code(code, context=context).error is None
    (pid,) = _sleepers(marker)  # the run returned after Popen: it exists
    return pid


# -- where a context's code runs ------------------------------------------------------------


def test_a_contexts_code_runs_as_the_sessions_in_its_cgroup_and_namespaces(sbx: Sandbox) -> None:
    context = sbx.create_code_context()
    default_marker, context_marker = _marker(), _marker()
    default_pid = _start_sleeper(sbx, None, default_marker)
    context_pid = _start_sleeper(sbx, context, context_marker)

    def cgroup(pid: int) -> str:
        return Path(f"/proc/{pid}/cgroup").read_text()

    assert "lmc-" in cgroup(context_pid)
    assert cgroup(context_pid) == cgroup(default_pid)  # one cgroup: one set of limits
    status = Path(f"/proc/{context_pid}/status").read_text()
    uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
    assert "0" not in uids
    for ns in ("pid", "mnt", "net"):
        assert os.readlink(f"/proc/{context_pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}")
    seen = sbx.run_code(
        "import getpass, os; print(getpass.getuser(), os.getuid())", context=context
    )
    assert seen.logs.stdout == ["user 1000\n"]


def test_a_context_holds_within_the_sessions_memory(sbx: Sandbox) -> None:
    context = sbx.create_code_context()
    hog = sbx.run_code(
        "blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))", context=context
    )
    assert hog.error is not None
    # The sandbox and its other contexts live on.
    assert sbx.run_code("1 + 1").text == "2"
    assert sbx.run_code("'after'", context=context).text == "after"


def test_a_contexts_process_flood_is_held(sbx: Sandbox) -> None:
    context = sbx.create_code_context()
    flood = sbx.run_code(
        "import subprocess\nprocs = []\n"
        "try:\n"
        "    for _ in range(500):\n"
        "        procs.append(subprocess.Popen(['sleep', '60']))\n"
        "finally:\n"
        "    started = len(procs)\n"
        "    for p in procs: p.kill()\n"
        "started",
        context=context,
    )
    assert flood.error is not None  # it could not start 500
    assert sbx.run_code("'alive'").text == "alive"


def test_a_contexts_endless_loop_ends_at_the_wall_limit(sbx: Sandbox) -> None:
    context = sbx.create_code_context()
    sbx.run_code("kept = 3", context=context)
    spin = sbx.run_code("while True:\n    pass", context=context, timeout=120)
    assert spin.error is not None and spin.error.name == "TimeoutError"
    assert sbx.run_code("kept", context=context).text == "3"


def test_an_output_flood_and_a_huge_display_stay_within_the_budget(sbx: Sandbox) -> None:
    context = sbx.create_code_context()
    printed = sbx.run_code("print('x' * (50 << 20))", context=context)
    assert sum(len(line) for line in printed.logs.stdout) < 2 * OUTPUT_BYTES
    # A display's bundle is charged too: every format of it, not only the one
    # lmc's own clients are shown.
    shown = sbx.run_code(
        "from IPython.display import display\n"
        "display({'text/plain': 'small', 'text/markdown': 'm' * (20 << 20),"
        " 'application/x-big': 'b' * (20 << 20)}, raw=True)",
        context=context,
    )
    total = sum(len(str(value)) for result in shown.results for value in vars(result).values())
    assert total < 2 * OUTPUT_BYTES


# -- one sandbox's contexts and another's ----------------------------------------------------


def test_a_context_of_one_sandbox_is_out_of_anothers_reach(env: Server) -> None:
    first, second = Sandbox.create(timeout=120), Sandbox.create(timeout=120)
    try:
        context = first.create_code_context()
        first.run_code("secret = 'first-only'", context=context)
        assert context.id not in [c.id for c in second.list_code_contexts()]
        with pytest.raises(NotFoundException):
            second.run_code("secret", context=context)
        with pytest.raises(NotFoundException):
            second.restart_code_context(context.id)
        with pytest.raises(NotFoundException):
            second.remove_code_context(context.id)
        assert first.run_code("secret", context=context).text == "first-only"
    finally:
        first.kill()
        second.kill()


def test_contexts_are_capped_even_when_made_all_at_once(sbx: Sandbox) -> None:
    made: list[str] = []
    refused: list[str] = []

    def create() -> None:
        try:
            made.append(sbx.create_code_context().id)
        except SandboxException as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=create) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert 0 < len(made) <= 8
    assert len(made) + len(refused) == 24
    assert all("429" in why and "remove one first" in why for why in refused)
    # Removing one makes room for one.
    sbx.remove_code_context(made[0])
    sbx.create_code_context()
    with pytest.raises(SandboxException, match="429"):
        sbx.create_code_context()


# -- bodies ----------------------------------------------------------------------------------


def test_a_huge_code_body_is_refused_with_413(sbx: Sandbox, env: Server) -> None:
    huge = {"code": "x = 1\n" * (400_000)}
    answer = _post(env, sbx, "/execute", json=huge)
    assert answer.status_code == 413
    assert answer.json()["code"] == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it comes
        yield b'{"code": "'
        for _ in range(64):
            yield b"y" * (64 << 10)
        yield b'"}'

    assert _post(env, sbx, "/execute", content=chunks()).status_code == 413
    assert sbx.run_code("'still here'").text == "still here"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/execute", b"not json"),
        ("/execute", b"[1, 2]"),
        ("/execute", b"{}"),
        ("/execute", b'{"code": 1}'),
        ("/execute", b'{"code": "1", "env_vars": {"A": 1}}'),
        ("/execute", b'{"code": "1", "env_vars": ["A"]}'),
        ("/execute", b'{"code": "1", "context_id": 5}'),
        ("/execute", b'{"code": "1", "timeout": -1}'),
        ("/execute", b'{"code": "1", "language": "cobol"}'),
        ("/execute", b'{"code": "1", "language": "python", "context_id": "x"}'),
        ("/execute", b'{"code": "1", "context_id": "no-such-context"}'),
        ("/execute", b'{"code": "\\ud800", "language": "' + b"p" * 500 + b'"}'),
        ("/contexts", b'{"cwd": "relative/path"}'),
        ("/contexts", b'{"cwd": "/home/user/../../etc"}'),
        ("/contexts", b'{"cwd": "/home/user/\\u0000"}'),
        ("/contexts", b'{"language": "cobol"}'),
        ("/contexts", b'{"language": ["python"]}'),
        ("/contexts", b"\xff\xfe"),
        ("/contexts/no-such-context/restart", b""),
    ],
)
def test_malformed_requests_get_4xx_in_e2bs_shape(
    sbx: Sandbox, env: Server, path: str, body: bytes
) -> None:
    answer = _post(env, sbx, path, content=body, headers={"Content-Type": "application/json"})
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.json()["code"] == answer.status_code
    deleted = httpx.delete(f"{env.url}/contexts/nothing", headers=_headers(sbx), timeout=30)
    assert deleted.status_code == 404


def test_code_in_a_secure_sandbox_needs_its_access_token(env: Server) -> None:
    sandbox = Sandbox.create(timeout=120, secure=True)
    try:
        headers = _headers(sandbox)
        headers.pop("X-Access-Token", None)
        answer = httpx.post(
            f"{env.url}/execute", headers=headers, json={"code": "print(1)"}, timeout=30
        )
        assert answer.status_code == 401
    finally:
        sandbox.kill()


# -- a context's cwd -------------------------------------------------------------------------


def test_a_cwd_through_a_planted_link_is_not_followed_on_the_host(sbx: Sandbox) -> None:
    with tempfile.TemporaryDirectory() as outside:
        os.chmod(outside, 0o777)  # were the host to follow the link, it could write here
        planted = sbx.run_code(f"import os; os.symlink({outside!r}, '/home/user/escape')")
        assert planted.error is None
        with pytest.raises(SandboxException, match="400"):
            sbx.create_code_context(cwd="/home/user/escape/made-by-host")
        assert os.listdir(outside) == []


# -- nothing outlives its sandbox ------------------------------------------------------------


def test_a_contexts_processes_end_with_the_sandbox(env: Server) -> None:
    sandbox = Sandbox.create(timeout=120)
    context = sandbox.create_code_context()
    marker = _marker()
    pid = _start_sleeper(sandbox, context, marker)
    sandbox.kill()
    assert process_ended(pid, 30)
    assert _sleepers(marker) == []
