"""A policy session's namespace helper: its firewall, its command line, and the
handover of its sockets to the server (refusals included, never a hang)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.egress import handover as handover_module
from lmc_runtime.egress.handover import Handover, HandoverRefused, check_sockets
from lmc_runtime.egress.hooks import SessionSockets
from lmc_runtime.sandbox.egress_netns import (
    EGRESS_HELPER,
    PROXY_ENV,
    EgressTools,
    egress_netns_command,
)
from lmc_runtime.sandbox.launch import SandboxLauncher

from .scripts import load_script

HELPER = load_script(EGRESS_HELPER, "_egressns_under_test")


def test_the_firewall_redirects_tcp_and_dns_and_rejects_the_rest() -> None:
    rules = HELPER.rules4(15001, 53)
    nat, filter_ = rules.split("*filter")
    assert "-A OUTPUT -p udp --dport 53 -j REDIRECT --to-ports 53" in nat
    assert "-A OUTPUT -p tcp --dport 53 -j REDIRECT --to-ports 53" in nat
    assert "-A OUTPUT -p tcp ! -d 127.0.0.0/8 -j REDIRECT --to-ports 15001" in nat
    # Loopback (where the redirected connections land) only; everything else rejected.
    assert filter_.index("-o lo -j ACCEPT") < filter_.index("-A OUTPUT -j REJECT")
    assert rules.count("COMMIT") == 2 and rules.endswith("\n")
    assert "-o lo -j ACCEPT" in HELPER.RULES6 and "-A OUTPUT -j REJECT" in HELPER.RULES6


def test_every_address_is_routed_through_loopback() -> None:
    commands = HELPER.interface_commands("/sbin/ip")
    assert commands[0] == ["/sbin/ip", "link", "set", "lo", "up"]
    assert ["/sbin/ip", "route", "add", "default", "dev", "lo", "src", HELPER.SOURCE] in commands


def test_the_helpers_command_line_and_the_launchers() -> None:
    tools = EgressTools("/sbin/ip", "/sbin/iptables-restore", "/sbin/ip6tables-restore")
    argv = egress_netns_command(tools, Path("/data/s/egress.sock"))
    assert argv[:4] == [sys.executable, "-I", "-S", str(EGRESS_HELPER)]
    assert argv[argv.index("--handover") + 1] == "/data/s/egress.sock"
    assert argv[-1] == "--bwrap-env"
    launcher = SandboxLauncher(bwrap="/usr/bin/bwrap", network=True, egress_handover=Path("/h"))
    wrapped = launcher.wrap(["python3", "-c", "pass"])
    assert str(EGRESS_HELPER) in wrapped and "--share-net" in wrapped
    assert "--slirp4netns" not in wrapped


def test_the_proxy_variables_name_the_namespaces_proxy() -> None:
    assert PROXY_ENV["HTTP_PROXY"] == PROXY_ENV["https_proxy"] == "http://127.0.0.1:3128"
    assert f":{HELPER.PROXY_PORT}" in PROXY_ENV["HTTPS_PROXY"]
    assert HELPER.HELLO == handover_module.HELLO


def _listeners() -> list[socket.socket]:
    made = []
    for kind in (socket.SOCK_STREAM, socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_STREAM):
        sock = socket.socket(socket.AF_INET, kind)
        sock.bind(("127.0.0.1", 0))
        if kind == socket.SOCK_STREAM:
            sock.listen()
        made.append(sock)
    return made


def _fds(socks: list[socket.socket]) -> list[int]:
    return [os.dup(sock.fileno()) for sock in socks]


def test_sockets_of_the_servers_own_namespace_are_refused() -> None:
    socks = _listeners()
    with pytest.raises(HandoverRefused, match="server's own network namespace"):
        check_sockets(HELPER.HELLO, _fds(socks))
    for sock in socks:
        sock.close()


@pytest.mark.parametrize(
    "what",
    ["wrong hello", "three sockets", "a pipe", "not listening", "udp first"],
)
def test_garbage_is_refused_and_closed(what: str) -> None:
    socks = _listeners()
    data = HELPER.HELLO
    if what == "wrong hello":
        data = b"hello"
    elif what == "three sockets":
        socks.pop().close()
    elif what == "a pipe":
        read, write = os.pipe()
        os.close(write)
        socks[0].close()
        fds = [read, *_fds(socks[1:])]
    elif what == "not listening":
        socks[1].close()
        socks[1] = socket.socket()
    elif what == "udp first":
        socks[0], socks[2] = socks[2], socks[0]
    if what != "a pipe":
        fds = _fds(socks)
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(HandoverRefused):
        check_sockets(data, fds)
    # Every descriptor handed over is closed.
    assert len(os.listdir("/proc/self/fd")) == before - len(fds)
    for sock in socks:
        sock.close()


class _Recorder:
    def __init__(self) -> None:
        self.attached: list[str] = []
        self.detached: list[str] = []

    def attach(self, key: str, policy: Any, sockets: SessionSockets) -> None:
        self.attached.append(key)
        sockets.close()

    async def detach(self, key: str) -> None:
        self.detached.append(key)


def _send(path: Path, data: bytes, fds: list[int]) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        if data:
            socket.send_fds(sock, [data], fds)
        else:
            sock.shutdown(socket.SHUT_WR)  # a helper that dies without a word
        return sock.recv(4096)


def test_the_handover_answers_a_refusal_and_a_silent_helper() -> None:
    async def scenario(tmp: Path) -> tuple[bytes, bytes, _Recorder]:
        gateway = _Recorder()
        handover = Handover(tmp / "egress.sock", gateway, "s1", policy=None)
        handover.start()
        socks = _listeners()
        refused = await asyncio.to_thread(
            _send, handover.path, HELPER.HELLO, [s.fileno() for s in socks]
        )
        silent = await asyncio.to_thread(_send, handover.path, b"", [])
        for sock in socks:
            sock.close()
        await handover.aclose()
        return refused, silent, gateway

    with tempfile.TemporaryDirectory() as folder:
        refused, silent, gateway = asyncio.run(asyncio.wait_for(scenario(Path(folder)), 30))
    assert refused.startswith(b"no: ") and b"own network namespace" in refused
    assert silent.startswith(b"no: ")
    assert gateway.attached == [] and gateway.detached == []
