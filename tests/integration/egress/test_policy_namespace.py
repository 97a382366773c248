"""A real sandbox under an egress policy: its namespace has no way out but the
sockets it hands to the server, DNS answers only for allowed names, and
connections reach only allowed upstreams, transparently and through HTTP_PROXY."""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer
from lmc_runtime.egress.policy import EgressPolicy, parse_entries
from lmc_runtime.sandbox import Sandbox, SandboxPolicy, sandbox_available
from lmc_runtime.sandbox.egress_netns import (
    egress_available,
    egress_netns_command,
    require_egress_tools,
)
from lmc_runtime.sandbox.network import host_addresses

from .local_gateway import LocalGateway, MapResolver

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not sandbox_available().available, reason=f"no sandbox: {sandbox_available().reason}"
    ),
]


def _outside() -> str | None:
    """One of the host's own non-loopback addresses, looked up when a test needs it:
    the one its default route leaves from (no packet is sent), else any. (Read at
    import time, the list held the addresses of namespaces another test run had
    made, gone by the time a server was bound to one: EADDRNOTAVAIL.)"""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))
        return str(probe.getsockname()[0])
    found = [a for a in host_addresses() if not a.startswith("127.") and not a.endswith(".255")]
    return found[0] if found else None


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def sessions() -> Iterator[Path]:
    """Where the sandbox's folder lives: the session's own uid passes through it
    (not under pytest's folder, whose mode another pytest run may reset to 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="lmc-egress-test-", dir="/var/tmp"))
    folder.chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"HELLO {self.path} via {self.headers.get('Host')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _serve(address: str) -> Iterator[int]:
    server = http.server.ThreadingHTTPServer((address, 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def upstream() -> Iterator[tuple[str, int]]:
    """A plain HTTP server on one of the host's own (non-loopback) addresses."""
    address = _outside()
    if address is None:
        pytest.skip("the host has no address but loopback")
    for port in _serve(address):
        yield address, port


CHECKS = """
import errno, json, socket, urllib.request
result = {{}}
def resolve(name):
    try:
        return sorted({{a[4][0] for a in socket.getaddrinfo(name, 80, socket.AF_INET)}})
    except socket.gaierror as exc:
        return "gaierror"
result["dns_allowed"] = resolve("upstream.example")
result["dns_other"] = resolve("other.example")
def fetch(url, proxied):
    handlers = [] if proxied else [urllib.request.ProxyHandler({{}})]
    try:
        return urllib.request.build_opener(*handlers).open(url, timeout=20).read().decode()
    except Exception as exc:
        return "FAILED " + type(exc).__name__
result["transparent"] = fetch("http://{address}:{port}/direct", False)
result["proxied"] = fetch("http://upstream.example:{port}/proxied", True)
result["proxied_denied"] = fetch("http://other.example:{port}/x", True)
result["other_port"] = fetch("http://{address}:{closed}/x", False)
result["other_address"] = fetch("http://203.0.113.9:{port}/x", False)
def v6():
    try:
        socket.create_connection(("2001:db8::1", 80), timeout=5)
        return "REACHED"
    except OSError as exc:
        return "BLOCKED"
result["ipv6"] = v6()
import os
result["proxy_env"] = os.environ.get("HTTP_PROXY")
result["resolv"] = open("/etc/resolv.conf").read() if os.path.exists("/etc/resolv.conf") else ""
print("RESULT" + json.dumps(result))
"""


def _result(text: str) -> dict[str, object]:
    import json

    lines = [line for line in text.splitlines() if line.startswith("RESULT")]
    assert lines, text
    return dict(json.loads(lines[0][len("RESULT") :]))


async def _run(computer: Computer, code: str) -> str:
    out = []
    async for message in computer.arun("python", code):
        if (message.type == "console" and message.format == "output") or message.type == "error":
            out.append(str(message.content))
    return "".join(out)


@pytest.mark.anyio
async def test_a_policy_session_reaches_only_what_its_policy_allows(
    sessions: Path, upstream: tuple[str, int]
) -> None:
    available = egress_available()
    if not available.available:
        pytest.skip(available.reason or "no egress namespace here")
    address, port = upstream
    closed = port + 1 if port < 65535 else port - 1
    allow = parse_entries(["upstream.example", f"{address}/32:{port}"], "allow")
    policy = EgressPolicy(allow=allow)
    gateway = LocalGateway(MapResolver({"upstream.example": [address]}))
    sandbox = Sandbox(sessions / "s", SandboxPolicy(network=policy), egress=gateway)
    await sandbox.start()
    try:
        async with sandbox.computer() as computer:
            code = CHECKS.format(address=address, port=port, closed=closed)
            result = _result(await _run(computer, code))
            assert (sandbox.root / "egress.sock").exists()
            keys = list(gateway.attached)
    finally:
        await sandbox.aclose()
    assert result["dns_allowed"] == [address], result
    assert result["dns_other"] == "gaierror", result
    assert result["transparent"] == f"HELLO /direct via {address}:{port}", result
    assert result["proxied"] == f"HELLO /proxied via upstream.example:{port}", result
    assert str(result["proxied_denied"]).startswith("FAILED"), result
    assert str(result["other_port"]).startswith("FAILED"), result
    assert str(result["other_address"]).startswith("FAILED"), result
    assert result["ipv6"] == "BLOCKED", result
    assert result["proxy_env"] == "http://127.0.0.1:3128", result
    if os.path.isfile("/etc/resolv.conf") and not os.path.islink("/etc/resolv.conf"):
        assert result["resolv"] == "nameserver 127.0.0.1\noptions edns0\n", result
    # Only the allowed upstream was ever dialled; every namespace was let go.
    assert set(gateway.dialled) == {(address, port)}, gateway.dialled
    assert keys and gateway.attached == {} and sorted(gateway.detached) == sorted(keys)
    assert not (sandbox.root / "egress.sock").exists()


def _helper_against(answer: bytes | None, folder: Path) -> subprocess.CompletedProcess[bytes]:
    """The helper run against a server that answers ``answer`` (None: nothing)."""
    tools = require_egress_tools()
    path = folder / "handover.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)
        argv = [*egress_netns_command(tools, path, bwrap_env=False), "--timeout", "2"]
        process = subprocess.Popen([*argv, "--", "/bin/true"], stderr=subprocess.PIPE)
        listener.settimeout(30)
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(30)
            _, fds, _, _ = socket.recv_fds(conn, 256, 8)
            for fd in fds:
                os.close(fd)
            if answer is not None:
                conn.send(answer)
            _, stderr = process.communicate(timeout=30)
    return subprocess.CompletedProcess(process.args, process.returncode, b"", stderr)


@pytest.mark.parametrize(
    ("answer", "said"),
    [(b"no: the gateway cannot serve it", b"cannot serve it"), (None, b"no answer in time")],
)
def test_a_helper_the_server_refuses_or_ignores_fails_clearly(
    sessions: Path, answer: bytes | None, said: bytes
) -> None:
    available = egress_available()
    if not available.available:
        pytest.skip(available.reason or "no egress namespace here")
    done = _helper_against(answer, sessions)
    assert done.returncode == 127
    assert b"lmc sandbox: network: the server's egress gateway refused" in done.stderr
    assert said in done.stderr, done.stderr
