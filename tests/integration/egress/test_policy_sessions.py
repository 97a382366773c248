"""``lmc serve`` with an egress ceiling, and sessions that ask for a policy: the
API takes and shows it, refuses what is malformed (400) or beyond the ceiling
(403); inside, DNS answers only allowed names and connections reach only
allowed servers (transparently and through HTTP_PROXY); deleting the session
lets its namespaces' sockets go."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pytest

from benchmarks.internet import ALLOWED, OTHER, TestInternet
from lmc_runtime.errors import ArgumentTypeError
from lmc_runtime.remote import RemoteComputer
from lmc_runtime.sandbox import sandbox_available
from tests.integration.service.server import TOKEN, Server, output, wait_for_pool

from .internet import policy_server

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not sandbox_available().available, reason="needs bubblewrap"),
]


@pytest.fixture(scope="module")
def server(internet: TestInternet) -> Iterator[Server]:
    with policy_server(internet, "--pool-size", "0") as running:
        yield running


def _sockets(pid: int) -> int:
    """How many sockets process ``pid`` holds."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            continue
    return count


CHECKS = """
import json, os, socket, urllib.request
def resolve(name):
    try:
        return sorted({{a[4][0] for a in socket.getaddrinfo(name, 80, socket.AF_INET)}})
    except socket.gaierror:
        return "gaierror"
def fetch(url, proxied):
    handlers = [] if proxied else [urllib.request.ProxyHandler({{}})]
    try:
        with urllib.request.build_opener(*handlers).open(url, timeout=20) as response:
            return response.status
    except Exception as exc:
        return "FAILED " + type(exc).__name__
print(json.dumps({{
    "allowed": resolve("{allowed}"), "other": resolve("{other}"),
    "transparent": fetch("http://{allowed}/", False),
    "literal": fetch("http://{allowed_ip}/", False),
    "proxied": fetch("http://{allowed}/", True),
    "other_proxied": fetch("http://{other}/", True),
    "other_direct": fetch("http://{other_ip}/", False),
    "proxy": os.environ.get("HTTPS_PROXY"),
}}))
"""


def test_a_policy_session_reaches_only_its_allowed_server(
    server: Server, internet: TestInternet
) -> None:
    policy = {"allow": [ALLOWED, f"{internet.allowed}/32"], "deny": []}
    before = _sockets(server.process.pid)
    session = server.create(network=policy)
    try:
        with server.client() as client:
            shown = client.get(f"/v1/sessions/{session}").json()["network"]
        assert shown == policy
        mark = internet.mark()
        code = CHECKS.format(
            allowed=ALLOWED, other=OTHER, allowed_ip=internet.allowed, other_ip=internet.other
        )
        text = output(server.execute(session, code, timeout=120)).strip()
        result = json.loads(text.splitlines()[-1])
        during = _sockets(server.process.pid)
    finally:
        server.delete(session)
    assert result["allowed"] == [internet.allowed], result
    assert result["other"] == "gaierror", result
    assert result["transparent"] == result["literal"] == result["proxied"] == 200, result
    assert str(result["other_proxied"]).startswith("FAILED"), result
    assert str(result["other_direct"]).startswith("FAILED"), result
    assert result["proxy"] == "http://127.0.0.1:3128", result
    assert internet.connections(internet.other, since=mark) == 0
    assert internet.connections(internet.allowed, since=mark) >= 3
    # The namespace's four listening sockets (at least) were the server's while
    # the session lived, and are let go with it.
    assert during >= before + 4
    deadline = time.monotonic() + 30
    while _sockets(server.process.pid) > before + 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _sockets(server.process.pid) <= before + 2


@pytest.mark.parametrize(
    ("network", "status", "said"),
    [
        ({"allow": ["pypi.org"]}, 403, "outside what this server allows"),
        ({"allow": ["not a name!"]}, 400, "not a name!"),
        ({"allow": [ALLOWED], "extra": []}, 400, "extra"),
    ],
)
def test_a_policy_beyond_the_ceiling_or_malformed_is_refused(
    server: Server, network: dict[str, list[str]], status: int, said: str
) -> None:
    with server.client() as client:
        response = client.post("/v1/sessions", json={"network": network})
    assert response.status_code == status, response.text
    assert said in response.text


RESOLVE = """
import socket
try:
    print(sorted({a[4][0] for a in socket.getaddrinfo(%r, 80, socket.AF_INET)}))
except socket.gaierror:
    print("gaierror")
"""


def test_warm_sessions_of_a_server_with_a_ceiling_are_made_under_it(
    internet: TestInternet,
) -> None:
    args = ("--network-default", "--pool-size", "1")
    with policy_server(internet, *args) as running:
        wait_for_pool(running)
        session = running.create()
        try:
            with running.client() as client:
                info = client.get(f"/v1/sessions/{session}").json()
            allowed = output(running.execute(session, RESOLVE % ALLOWED, timeout=60)).strip()
        finally:
            running.delete(session)
    assert info["pooled"] is True
    assert info["network"]["allow"] == internet.ceiling.split(","), info
    assert allowed == str([internet.allowed])


def test_a_remote_computer_asks_for_a_policy(server: Server, internet: TestInternet) -> None:
    policy = {"allow": [ALLOWED]}
    with RemoteComputer(server.url, token=TOKEN, network=policy) as computer:
        replies = list(computer.run("python", RESOLVE % ALLOWED))
        other = list(computer.run("python", RESOLVE % OTHER))
        shown = computer.info["network"]
    assert shown == {"allow": [ALLOWED], "deny": []}
    texts = ["".join(str(m.content) for m in r if m.format == "output") for r in (replies, other)]
    assert [t.strip() for t in texts] == [str([internet.allowed]), "gaierror"]
    with pytest.raises(ArgumentTypeError):
        RemoteComputer(server.url, token=TOKEN, network={"allow": "pypi.org"})  # type: ignore[dict-item]
