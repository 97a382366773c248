"""Run inside a network namespace of its own (``unshare -n``, as root): its
firewall redirects connections from 127.0.0.9 to the gateway's transparent
socket, as a session's namespace does, and the gateway finds where they were
going with the kernel's own ``SO_ORIGINAL_DST``. Prints one JSON line."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys

from lmc_runtime.egress.gateway import EgressGateway, GatewayLimits
from lmc_runtime.egress.splice import original_destination

from .harness import WAIT, StaticResolver, Upstream, policy, session_sockets

CLIENT = "127.0.0.9"


async def _through(dest: tuple[str, int], host: str | None) -> str:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((CLIENT, 0))
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, dest)
    reader, writer = await asyncio.open_connection(sock=sock)
    writer.write(f"GET /x HTTP/1.1\r\n{f'Host: {host}' if host else 'X: y'}\r\n\r\n".encode())
    await writer.drain()
    try:
        return (await asyncio.wait_for(reader.read(-1), WAIT)).decode("latin-1")
    except ConnectionError:
        return ""
    finally:
        writer.close()


async def main() -> dict[str, object]:
    good = await Upstream("good", "127.0.0.2").start()
    evil = await Upstream("evil", "127.0.0.3").start()
    seen: list[tuple[str, int]] = []

    def recorded(sock: socket.socket) -> tuple[str, int]:
        seen.append(original_destination(sock))
        return seen[-1]

    sockets = session_sockets()
    port = sockets.transparent.getsockname()[1]
    rule = ["-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-s", CLIENT, "-j", "REDIRECT"]
    subprocess.run(["iptables", "-w", *rule, "--to-ports", str(port)], check=True)
    gateway = EgressGateway(
        StaticResolver({"good.test": ["127.0.0.2"]}),
        limits=GatewayLimits(head_timeout=2.0),
        original_destination=recorded,
    )
    await gateway.attach("s1", policy(["good.test", "127.0.0.2"]), sockets)
    try:
        return {
            "named": await _through(("127.0.0.2", good.port), "good.test"),
            "literal": await _through(("127.0.0.3", evil.port), None),
            "fronted": await _through(("127.0.0.3", evil.port), "good.test"),
            "seen": seen,
            "ports": [good.port, evil.port],
            "evil_seen": evil.seen,
        }
    finally:
        await gateway.aclose()


if __name__ == "__main__":
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    sys.stdout.write("RESULT " + json.dumps(asyncio.run(main())) + "\n")
