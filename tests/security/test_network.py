"""Attack: a session with network access reaches the host's own services.

Network access is for the internet. The host's loopback services (the lmc API
itself among them), the host's own addresses and its abstract unix sockets
must stay out of reach of a session that has it, and a session gets it only
when the operator allows it (``--allow-network``).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.service.server import TOKEN, free_port, output

from .harness import Account, as_user, serve_as

TUN = Path("/dev/net/tun")
OUTSIDE = ("deb.debian.org", 80)


def _host_address() -> str:
    """The host's address on the interface that leads outside (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((socket.gethostbyname(OUTSIDE[0]), OUTSIDE[1]))
        return str(probe.getsockname()[0])


class HostServices:
    """Listeners on the host: TCP on loopback and on the host's own address, an
    abstract unix socket; each records whether anyone connected."""

    def __init__(self) -> None:
        self.address = _host_address()
        self.abstract = f"lmc-test-{secrets.token_hex(6)}"
        self.sockets: dict[str, socket.socket] = {
            "loopback": socket.create_server(("127.0.0.1", 0)),
            "address": socket.create_server((self.address, 0)),
            "abstract": socket.socket(socket.AF_UNIX, socket.SOCK_STREAM),
        }
        self.sockets["abstract"].bind("\0" + self.abstract)
        self.sockets["abstract"].listen()
        with contextlib.suppress(OSError):
            self.sockets["loopback6"] = socket.create_server(("::1", 0), family=socket.AF_INET6)
        self.reached: set[str] = set()
        self._threads = [
            threading.Thread(target=self._accept, args=(name, sock), daemon=True)
            for name, sock in self.sockets.items()
        ]
        for thread in self._threads:
            thread.start()

    def port(self, name: str) -> int:
        return int(self.sockets[name].getsockname()[1])

    def _accept(self, name: str, sock: socket.socket) -> None:
        while True:
            try:
                client, _ = sock.accept()
            except OSError:
                return
            self.reached.add(name)
            client.close()

    def close(self) -> None:
        for sock in self.sockets.values():
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in self._threads:
            thread.join(timeout=10)


@pytest.fixture(scope="module")
def host() -> Iterator[HostServices]:
    """Services on the host the sandboxes must not reach, shared by the module's probes."""
    services = HostServices()
    yield services
    services.close()


PROBE = """
import json, socket
def tcp(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect((host, port))
        return "open"
    except OSError as exc:
        return type(exc).__name__
def abstract(name):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect("\\0" + name)
        return "open"
    except OSError as exc:
        return type(exc).__name__
print(json.dumps({targets}))
"""


def _attack(server: Any, host: HostServices, **body: Any) -> dict[str, str]:
    """Run the probes in a new session; what each target answered."""
    targets = {
        "loopback": f"tcp('127.0.0.1', {host.port('loopback')})",
        "loopback_other": f"tcp('127.0.0.2', {host.port('loopback')})",
        "address": f"tcp({host.address!r}, {host.port('address')})",
        "api": f"tcp('127.0.0.1', {server.port})",
        "gateway": f"tcp('10.0.2.2', {host.port('loopback')})",
        "abstract": f"abstract({host.abstract!r})",
        "outside": f"tcp({OUTSIDE[0]!r}, {OUTSIDE[1]})",
    }
    if "loopback6" in host.sockets:
        targets["loopback6"] = f"tcp('::1', {host.port('loopback6')})"
    code = PROBE.replace(
        "{targets}", "{" + ", ".join(f"{k!r}: {v}" for k, v in targets.items()) + "}"
    )
    session = server.create(**body)
    try:
        out = output(server.execute(session, code))
    finally:
        server.delete(session)
    return dict(json.loads(out.strip().splitlines()[-1]))


def _tun_open_to_all() -> bool:
    """A root server runs sessions as uids of their own, an unprivileged one as
    itself: either way the device must be open to users other than root."""
    return TUN.stat().st_mode & 0o006 == 0o006


@pytest.fixture
def tun_for() -> Iterator[None]:
    """/dev/net/tun usable by the account, as Debian's udev rule makes it (0666);
    the mode it had is restored afterwards."""
    mode = stat.S_IMODE(TUN.stat().st_mode)
    os.chmod(TUN, 0o666)
    try:
        yield
    finally:
        os.chmod(TUN, mode)


def test_network_session_cannot_reach_the_host(
    account: Account, host: HostServices, tun_for: None
) -> None:
    with serve_as(account, "--allow-network", "--pool-size", "0", "--max-sessions", "1") as server:
        answers = _attack(server, host, network=True)
    assert answers["outside"] == "open", answers
    for target in ("loopback", "loopback_other", "address", "api", "gateway", "abstract"):
        assert answers[target] != "open", (target, answers)
    if "loopback6" in answers:
        assert answers["loopback6"] != "open", answers
    assert not host.reached, host.reached


def test_network_is_off_by_default(account: Account, host: HostServices, tun_for: None) -> None:
    with serve_as(account, "--allow-network", "--pool-size", "0", "--max-sessions", "1") as server:
        answers = _attack(server, host)
    assert set(answers.values()) - {"open"} and "open" not in answers.values(), answers
    assert not host.reached, host.reached


def test_network_needs_the_operators_consent(account: Account) -> None:
    with serve_as(account, "--pool-size", "0", "--max-sessions", "1") as server:
        with server.client() as client:
            response = client.post("/v1/sessions", json={"network": True})
            plain = client.post("/v1/sessions", json={})
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == "network_not_allowed" and "--allow-network" in error["message"]
    assert plain.status_code == 201, plain.text


def test_network_default_implies_allow_network(
    account: Account, host: HostServices, tun_for: None
) -> None:
    with serve_as(
        account, "--network-default", "--pool-size", "0", "--max-sessions", "1"
    ) as server:
        answers = _attack(server, host)
    assert answers["outside"] == "open", answers
    assert answers["loopback"] != "open" and answers["address"] != "open", answers


def test_allow_network_is_refused_where_tun_is_closed(account: Account) -> None:
    """An unprivileged server that cannot open /dev/net/tun refuses to start
    with --allow-network, saying why, rather than serving sessions it cannot isolate."""
    if _tun_open_to_all():
        pytest.skip("/dev/net/tun is open to every user here")
    argv = [*as_user(account), sys.executable, "-m", "lmc_runtime", "serve"]
    argv += ["--allow-network", "--port", str(free_port()), "--data-dir", "/nonexistent-lmc"]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LMC_TOKEN": TOKEN},
        check=False,
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "/dev/net/tun" in lines[0] and "--allow-network" in lines[0], lines
