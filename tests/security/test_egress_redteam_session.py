"""Attacks on the plumbing of a session's egress namespace, from code inside a
real session of a root ``lmc serve`` over the test internet.

* **The handover socket.** The session's namespaces hand their listening
  sockets to the server over ``<session folder>/egress.sock``; a sandbox that
  reached it (or another session's) could hand over sockets of its own. It is
  not in the sandbox's view by its host path, through ``/proc/<pid>/root``, or
  among the namespace's unix sockets.
* **The gateway's listeners.** Code that bound 127.0.0.1:53, 3128 or 15001 in
  its namespace would answer its own DNS and proxy; it has no capability there.
* **The transparent listener dialled directly**, with an allowed ``Host``: the
  connection "was going" to loopback, which no name resolves to.
* **HTTP/2 with prior knowledge** names no host the gateway can check: refused
  (its address is not listed), never spliced to the address dialled.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from benchmarks.internet import ALLOWED, TestInternet
from tests.integration.egress.internet import policy_server
from tests.integration.service.server import Server, output

from .egress_rig import GUARDED, Sandbox

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(os.geteuid() != 0, reason="the egress namespaces need root"),
]

ATTACK = r"""
import glob, json, os, socket
found = {}
folder = DATA + "/sessions/" + SID
paths = [folder + "/egress.sock"] + [
    f"/proc/{pid}/root{folder}/egress.sock" for pid in os.listdir("/proc") if pid.isdigit()
]
found["handover"] = [p for p in paths if os.path.lexists(p)]
found["unix"] = [l for l in open("/proc/net/unix").read().splitlines() if "egress" in l]
def bind(kind, port):
    try:
        s = socket.socket(socket.AF_INET, kind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        if kind == socket.SOCK_STREAM:
            s.listen(1)
        return "bound"
    except OSError as exc:
        return type(exc).__name__
found["binds"] = {
    "udp53": bind(socket.SOCK_DGRAM, 53), "tcp53": bind(socket.SOCK_STREAM, 53),
    "proxy": bind(socket.SOCK_STREAM, 3128), "transparent": bind(socket.SOCK_STREAM, 15001),
}
def send(address, port, data):
    try:
        with socket.create_connection((address, port), timeout=4) as s:
            s.sendall(data)
            got = b""
            while len(got) < 65536:
                piece = s.recv(65536)
                if not piece:
                    break
                got += piece
            return got.decode("latin-1")
    except OSError as exc:
        return type(exc).__name__
found["direct"] = send("127.0.0.1", 15001, f"GET / HTTP/1.1\r\nHost: {NAME}\r\n\r\n".encode())
found["h2c"] = send(NAME, 80, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def server(internet: TestInternet) -> Iterator[Server]:
    with policy_server(internet, "--pool-size", "0", "--max-sessions", "2") as running:
        yield running


def test_the_namespace_plumbing_is_out_of_reach(server: Server, internet: TestInternet) -> None:
    box = Sandbox(server, server.create(network=GUARDED), internet)
    since = internet.mark()
    code = f"DATA, SID, NAME = {str(server.data_dir)!r}, {box.session!r}, {ALLOWED!r}\n{ATTACK}"
    said = output(server.execute(box.session, code)).strip()
    found = json.loads(said.splitlines()[-1])
    assert os.path.exists(server.data_dir / "sessions" / box.session / "egress.sock")
    assert found["handover"] == [] and found["unix"] == [], found
    assert "bound" not in found["binds"].values(), found
    assert "hello from" not in found["direct"] + found["h2c"], found
    assert internet.connections(f"{internet.allowed}:80", since) == 0, found
    box.control()
