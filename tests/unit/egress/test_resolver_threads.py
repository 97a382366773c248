"""The host's resolver is slow for names whose DNS servers do not answer (a
zone under an allowed wildcard, or any name under ``*``), and ``getaddrinfo``
blocks a thread until the system's own timeout, past the gateway's. A session
asking for many such names must not take the threads the rest of the server
runs on (the loop's default executor: file operations, sandbox launches)."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import pytest

from lmc_runtime.egress.resolver import SystemResolver


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_slow_resolver_never_takes_the_servers_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    real = socket.getaddrinfo

    def slow(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.endswith(".slow.test"):
            release.wait(20)  # a DNS server that never answers, as the system waits on it
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    resolver = SystemResolver(timeout=0.2)
    try:
        names = [f"n{i}.slow.test" for i in range(64)]
        assert await asyncio.gather(*(resolver.resolve(n) for n in names)) == [[]] * 64
        free = await asyncio.wait_for(asyncio.to_thread(lambda: "free"), 5)
        assert free == "free"
        # and names still resolve once the slow ones are let go
        release.set()
        assert "127.0.0.1" in await SystemResolver(timeout=10).resolve("localhost")
    finally:
        release.set()
