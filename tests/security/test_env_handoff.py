"""Attacks on the environment handoff: variables sized to break the exec of the
wrappers or the interpreters, and one session's code looking for another's
variables in the memory files the handoff uses."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.service.server import Server, final_status, output

from .attacks import execute
from .harness import Account, serve_as

pytestmark = pytest.mark.timeout(300)

#: Python listing every memory file the code can open in its sandbox's /proc, and
#: whether it holds ``MARK``.
_MEMORY_FILES = r"""
import os
hits = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        continue
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if "memfd" in target:
                data = open(f"/proc/{pid}/fd/{fd}", "rb").read()
                hits.append((target, b"MARK" in data))
        except OSError:
            pass
print("memory files", hits)
"""


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    with serve_as(account, "--pool-size", "1", "--max-sessions", "4") as running:
        yield running


@pytest.mark.parametrize(
    "env",
    [
        {"BIG": "x" * 131_060},
        {f"V{i}": "y" * 120_000 for i in range(8)},
        {f"S{i}": "z" for i in range(20_000)},
    ],
    ids=["one-at-the-string-limit", "near-a-megabyte", "twenty-thousand-names"],
)
def test_environment_size_bombs_are_a_4xx_or_a_working_session(
    server: Server, env: dict[str, str], account: Account, request: pytest.FixtureRequest
) -> None:
    """Variables at the kernel's per-string limit, near the body's megabyte or by the
    thousand are refused with a 4xx, or make a session whose Python and shell run;
    never a 5xx or a start that hangs. Regression: under a root server, variables over
    some 208 KB in all went to the fork server as one message, which its socket
    refused (EMSGSIZE): a 503 session_failed. Such a kernel now starts the usual way."""
    with server.client() as client:
        made = client.post("/v1/sessions", json={"env": env, "languages": ["python", "shell"]})
        assert made.status_code < 500, made.text[:300]
        if made.status_code != 201:
            assert "env" in made.text or made.status_code == 413, made.text[:300]
            return
        sid = made.json()["id"]
    try:
        for language, code in (("python", "print('alive')"), ("shell", "echo alive")):
            messages = execute(server, sid, language, code)
            assert "alive" in output(messages) or final_status(messages) != "ok", messages[-2:]
    finally:
        server.delete(sid)


def test_one_session_never_reads_another_s_variables_from_memory_files(server: Server) -> None:
    """The handoff's memory files a session's code can open hold its own variables
    only: a pooled or fresh session next to it never finds the other's value."""
    mark = "MARK-" + "a1b2c3d4"
    owner = server.create(languages=["python"], env={"OWNER_SECRET": mark})
    other = server.create(languages=["python"])
    try:
        mine = output(
            execute(server, owner, "python", "import os; print(os.environ['OWNER_SECRET'])")
        )
        assert mark in mine, mine
        seen = output(execute(server, other, "python", _MEMORY_FILES))
        assert "memory files" in seen, seen
        assert "True" not in seen, seen
    finally:
        server.delete(owner)
        server.delete(other)
