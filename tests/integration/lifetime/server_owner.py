"""A test process that starts a server as the tests do, run as its own process by
test_test_servers.py, which SIGKILLs it.

``python -m tests.integration.lifetime.server_owner KIND`` (from the checkout)
starts KIND (``serve``, ``cluster``, ``gateway``, ``postgres``, ``mcp``,
``browser``) with the tests' own harness, prints one JSON line, then waits until
its stdin ends::

    {"leaders": [...], "pids": [...], "watcher": PID}

``leaders``: the servers' pids (each leads its process group and session, but
Playwright's driver, which a pipe from this process ends);
``pids``: every process of theirs then (the leaders, their descendants and the
members of their sessions); ``watcher``: the lifeline's watcher, if any.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import psutil

from lmc_runtime.procs import session_members
from tests.integration.gateway.server import KernelGateway
from tests.integration.mcp.client import http_server
from tests.integration.scale.cluster import running_cluster
from tests.integration.service.server import running_server
from tests.lifeline import watcher_pid
from tests.postgres_cluster import PostgresCluster


@contextmanager
def _started(kind: str, stack: ExitStack) -> Iterator[list[int]]:
    """The servers of ``kind``, started: their pids."""
    if kind == "serve":
        # A warm session: the server has interpreters of its own.
        server = stack.enter_context(running_server("--pool-size", "1"))
        yield [server.process.pid]
    elif kind == "cluster":
        cluster = stack.enter_context(running_cluster(["r1"], "--pool-size", "0"))
        assert cluster.process is not None
        replica = cluster.replica("r1").server
        assert replica is not None
        yield [replica.process.pid, cluster.process.pid]
    elif kind == "gateway":
        gateway = KernelGateway(Path(stack.enter_context(tempfile.TemporaryDirectory())))
        stack.callback(gateway.stop)
        gateway.start()
        assert gateway.process is not None
        # A kernel of its own (jupyter_client starts it in a session of its own).
        headers = {"Authorization": f"token {gateway.token}"}
        started = httpx.post(f"{gateway.url}/api/kernels", headers=headers, json={}, timeout=60)
        assert started.status_code == 201, started.text
        yield [gateway.process.pid]
    elif kind == "postgres":
        postgres = stack.enter_context(PostgresCluster())
        assert postgres.pid is not None
        yield [postgres.pid]
    elif kind == "mcp":
        mcp = stack.enter_context(http_server())
        yield [mcp.process.pid]
    elif kind == "browser":
        # As the console's tests launch it: Playwright's driver starts Chromium.
        from playwright import sync_api

        from tests.integration.console.conftest import ARGS, CHROMIUM

        playwright = stack.enter_context(sync_api.sync_playwright())
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        stack.callback(browser.close)
        browser.new_page().set_content("<p>open</p>")
        yield [p.pid for p in psutil.Process().children()]
    else:
        raise SystemExit(f"unknown kind {kind!r}")


def _theirs(leaders: list[int]) -> list[int]:
    pids = set(leaders)
    for leader in leaders:
        pids.update(session_members(leader))
        try:
            pids.update(p.pid for p in psutil.Process(leader).children(recursive=True))
        except psutil.NoSuchProcess:
            continue
    return sorted(pids)


def main(kind: str) -> None:
    with ExitStack() as stack, _started(kind, stack) as leaders:
        said = {"leaders": leaders, "pids": _theirs(leaders), "watcher": watcher_pid()}
        print(json.dumps(said), flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main(sys.argv[1])
