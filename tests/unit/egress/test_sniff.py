"""The sniffers: real ClientHellos made by Python's ssl, real HTTP request heads."""

from __future__ import annotations

import asyncio
import random
import ssl

import pytest

from lmc_runtime.egress.sniff import (
    INCOMPLETE,
    ClientHello,
    HttpHead,
    http_head,
    read_head,
    sniff,
    tls_client_hello,
)


def client_hello(server_name: str | None) -> bytes:
    """The first bytes Python's ssl sends to ``server_name``."""
    context = ssl.create_default_context()
    if server_name is None:
        context.check_hostname = False
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_the_sni_of_a_real_client_hello() -> None:
    hello = client_hello("files.pythonhosted.org")
    assert tls_client_hello(hello) == ClientHello("files.pythonhosted.org")
    assert sniff(hello) == ClientHello("files.pythonhosted.org")
    assert tls_client_hello(client_hello(None)) == ClientHello(None)
    for cut in (1, 5, 50, len(hello) - 1):
        assert tls_client_hello(hello[:cut]) == INCOMPLETE


def test_a_client_hello_split_over_two_records() -> None:
    hello = client_hello("pypi.org")
    body = hello[5:]
    half = len(body) // 2
    split = b"\x16\x03\x01" + half.to_bytes(2, "big") + body[:half]
    split += b"\x16\x03\x01" + (len(body) - half).to_bytes(2, "big") + body[half:]
    assert tls_client_hello(split) == ClientHello("pypi.org")


def test_other_tls_records_are_not_hellos() -> None:
    assert tls_client_hello(b"\x17\x03\x03\x00\x05hello") is None
    assert tls_client_hello(b"\x16\x03\x03\x00\x00") is None
    assert tls_client_hello(b"\x16\x03\x03\x00\x04\x02\x00\x00\x00") is None  # a ServerHello


def test_http_request_heads() -> None:
    raw = b"GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\nUser-Agent: pip\r\n\r\nbody"
    head = http_head(raw)
    assert isinstance(head, HttpHead)
    assert (head.method, head.target, head.version) == ("GET", "/simple/", "HTTP/1.1")
    assert head.header("host") == "pypi.org" and head.size == len(raw) - 4
    connect = http_head(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n")
    assert isinstance(connect, HttpHead) and connect.target == "pypi.org:443"
    twice = http_head(b"GET / HTTP/1.1\r\nHost: a.org\r\nHost: b.org\r\n\r\n")
    assert isinstance(twice, HttpHead) and twice.header("host") is None
    assert twice.header_count("host") == 2
    assert http_head(b"GE") == INCOMPLETE
    assert http_head(b"GET / HTTP/1.1\r\nHost: a") == INCOMPLETE
    assert http_head(b"SSH-2.0-OpenSSH_9.2\r\n") is None
    assert http_head(b"\x00\x01binary") is None
    assert http_head(b"GET / SPDY/3\r\n\r\n") is None
    assert http_head(b"GET / HTTP/1.1\r\nno colon\r\n\r\n") is None
    assert http_head(b"GET /" + b"a" * 20000) is None  # no end within the limit


def test_random_bytes_never_raise() -> None:
    rng = random.Random(30)
    seeds = [client_hello("pypi.org"), b"GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n"]
    for _ in range(5000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(1, 8)):
            data[rng.randrange(len(data))] = rng.getrandbits(8)
        sniff(bytes(data[: rng.randrange(len(data) + 1)]))


def test_read_head_stops_at_a_whole_head_or_the_timeout() -> None:
    async def main() -> None:
        reader = asyncio.StreamReader()
        hello = client_hello("pypi.org")
        reader.feed_data(hello[:100])
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, reader.feed_data, hello[100:] + b"more")
        data, found = await read_head(reader, timeout=5)
        assert found == ClientHello("pypi.org") and data.startswith(hello)
        silent = asyncio.StreamReader()
        started = loop.time()
        assert await read_head(silent, timeout=0.2) == (b"", None)
        assert loop.time() - started < 2

    asyncio.run(main())
