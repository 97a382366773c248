"""The test internet itself: what the attack tests read from it is true, and a
run that dies leaves nothing behind for long (its servers die with it, the
next run removes its namespaces)."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.internet import ALLOWED, WILD, TestInternet, netns_problem
from benchmarks.internet.dns import A, parse_question, query
from benchmarks.internet.netns import remove_stale

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def _ask(server: str, name: str) -> bytes:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.sendto(query(name), (server, 53))
        return sock.recv(512)


def test_the_servers_answer_and_record(internet: TestInternet) -> None:
    since = internet.mark()
    context = ssl.create_default_context(cafile=str(internet.ca_path))
    with socket.create_connection((internet.allowed, 443), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=ALLOWED) as tls:
            tls.sendall(b"GET /seen HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
            answer = b"".join(iter(lambda: tls.recv(4096), b""))
    assert b"hello from allowed /seen" in answer, answer
    rebinding = f"rebind-{os.getpid()}.{WILD}"
    first, later = _ask(internet.dns_ip, rebinding), _ask(internet.dns_ip, rebinding)
    assert parse_question(first).qtype == A
    assert first[-4:] == socket.inet_aton(internet.wild) and later[-4:] == socket.inet_aton(
        "127.0.0.1"
    )
    assert internet.connections(f"{internet.allowed}:443", since) == 1
    assert [e["sni"] for e in internet.events("sni", since=since)] == [ALLOWED]
    assert [e["path"] for e in internet.events("request", since=since)] == ["/seen"]
    assert internet.dns_names(since) == [rebinding, rebinding]

    trap = internet.metadata
    if trap is not None:  # the host's own attempt at the metadata address is counted
        counted = trap.count()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("169.254.169.254", internet.probe_port), timeout=5)
        assert trap.count() > counted


STARTER = """
import json, sys, pathlib
from benchmarks.internet import TestInternet
world = TestInternet(pathlib.Path(sys.argv[1])).start()
print(json.dumps({"pids": world.pids, "namespaces": world.namespaces}), flush=True)
sys.stdin.read()
"""


def _namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_run_leaves_nothing_behind(tmp_path: Path) -> None:
    problem = netns_problem()
    if problem is not None:
        pytest.skip(problem)
    with subprocess.Popen(
        [sys.executable, "-c", STARTER, str(tmp_path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as run:
        assert run.stdout is not None
        made = json.loads(run.stdout.readline())
        assert all(name in _namespaces() for name in made["namespaces"]), made
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=10)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in made["pids"]):  # they get SIGKILL with their parent
        assert time.monotonic() < deadline, f"servers outlived their run: {made['pids']}"
        time.sleep(0.05)
    remove_stale()
    left = _namespaces()
    assert not [name for name in made["namespaces"] if name in left], left
