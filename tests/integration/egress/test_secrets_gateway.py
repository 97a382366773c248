"""The secrets broker behind the real egress gateway: a session's connections,
redirected or through its HTTP proxy, to the secret's host get the value in
their headers; to another allowed host the placeholder stays a placeholder.
Upstreams are HTTPS servers with CAs of their own on loopback addresses of
their own (listed in the policy, else no name reaches them)."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.egress.secret_specs import parse_secret
from lmc_runtime.egress.secrets import SecretBroker, upstream_context

from .echo_upstream import Upstream, echo_upstream
from .harness import WAIT, Session, StaticResolver, policy, serving

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

VALUE = "sk-gw-0b1c2d3e4f5a69788796a5b4c3d2e1f0"
API, OTHER = "api.test", "other.test"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def upstreams(tmp_path: Path) -> Iterator[dict[str, Upstream]]:
    with (
        echo_upstream(API, tmp_path, host="127.0.0.2") as api,
        echo_upstream(OTHER, tmp_path, host="127.0.0.3") as other,
    ):
        yield {API: api, OTHER: other}


def bundle(tmp_path: Path, *files: Path | None) -> Path:
    """One file of the upstreams' CAs (the broker trusts them as --egress-ca-file)."""
    path = tmp_path / "upstream-cas.pem"
    path.write_bytes(b"".join(file.read_bytes() for file in files if file is not None))
    return path


async def request(
    stream: tuple[asyncio.StreamReader, asyncio.StreamWriter], host: str, token: str
) -> dict[str, Any]:
    """One GET of /echo with the token in two headers; the echoed request."""
    reader, writer = stream
    head = f"GET /echo HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
    writer.write(f"{head}X-Api-Key: {token}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(-1), WAIT)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    return dict(json.loads(answer.partition(b"\r\n\r\n")[2]))


async def through_proxy(
    session: Session, host: str, port: int, context: ssl.SSLContext
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A CONNECT through the session's HTTP proxy, then TLS to ``host``."""
    reader, writer = await session.proxy()
    writer.write(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    await writer.drain()
    reply = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
    assert reply.startswith(b"HTTP/1.1 200"), reply
    await asyncio.wait_for(writer.start_tls(context, server_hostname=host), WAIT)
    return reader, writer


async def test_the_secrets_host_gets_the_value_another_the_placeholder(
    tmp_path: Path, upstreams: dict[str, Upstream], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    api, other = upstreams[API], upstreams[OTHER]
    trusted = bundle(tmp_path, api.ca_file, other.ca_file)
    spec = parse_secret(f"API_KEY:{API}:{api.port}")
    broker = SecretBroker([spec], {"API_KEY": VALUE.encode()}, upstream=upstream_context(trusted))
    token = broker.open("s1", ["API_KEY"])["API_KEY"]
    sandbox_trust = ssl.create_default_context(cadata=broker.ca.pem.decode())
    sandbox_trust.load_verify_locations(cafile=str(other.ca_file))
    names = {API: ["127.0.0.2"], OTHER: ["127.0.0.3"]}
    allowed = policy([API, OTHER, "127.0.0.2", "127.0.0.3"])
    async with serving(allowed, StaticResolver(names), interceptor=broker) as session:
        redirected = await session.redirected(("127.0.0.2", api.port), sandbox_trust, API)
        seen = await request(redirected, API, token)
        assert seen["headers"]["Authorization"] == f"Bearer {VALUE}"
        assert seen["headers"]["X-Api-Key"] == VALUE
        proxied = await through_proxy(session, API, api.port, sandbox_trust)
        assert (await request(proxied, API, token))["headers"]["X-Api-Key"] == VALUE
        # Another allowed host: the gateway splices it, the broker never sees it.
        redirected = await session.redirected(("127.0.0.3", other.port), sandbox_trust, OTHER)
        assert (await request(redirected, OTHER, token))["headers"]["X-Api-Key"] == token
        proxied = await through_proxy(session, OTHER, other.port, sandbox_trust)
        assert (await request(proxied, OTHER, token))["headers"]["X-Api-Key"] == token
    assert api.seen.all().count(VALUE.encode()) == 4
    assert VALUE.encode() not in other.seen.all() and token.encode() in other.seen.all()
    assert caplog.records and not [r for r in caplog.records if VALUE in r.getMessage()]


async def test_the_broker_checks_the_real_hosts_certificate(
    tmp_path: Path, upstreams: dict[str, Upstream]
) -> None:
    api = upstreams[API]
    spec = parse_secret(f"API_KEY:{API}:{api.port}")
    broker = SecretBroker([spec], {"API_KEY": VALUE.encode()})  # the system's CAs only
    token = broker.open("s1", ["API_KEY"])["API_KEY"]
    sandbox_trust = ssl.create_default_context(cadata=broker.ca.pem.decode())
    allowed = policy([API, "127.0.0.2"])
    async with serving(allowed, StaticResolver({API: ["127.0.0.2"]}), interceptor=broker) as s:
        reader, writer = await s.redirected(("127.0.0.2", api.port), sandbox_trust, API)
        writer.write(f"GET /echo HTTP/1.1\r\nHost: {API}\r\nX-Api-Key: {token}\r\n\r\n".encode())
        answer = await asyncio.wait_for(reader.read(-1), WAIT)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 502"), answer[:200]
    assert api.seen.all() == b""
