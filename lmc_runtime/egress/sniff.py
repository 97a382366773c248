"""What a connection's first bytes say about where it goes: a TLS ClientHello's
server name (SNI), or an HTTP/1 request's line and ``Host`` header.

Both readers are pure, bounded, and safe on any bytes: they say
:data:`INCOMPLETE` while more bytes could still make a whole message, and
otherwise what they found or None. :func:`read_head` reads a connection's first
bytes until one of them has an answer, within a size and a time limit.
"""

from __future__ import annotations

import asyncio
import re
import struct
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "INCOMPLETE",
    "ClientHello",
    "HttpHead",
    "Sniffed",
    "http_head",
    "read_head",
    "sniff",
    "tls_client_hello",
]

INCOMPLETE: Final = "incomplete"
Incomplete = Literal["incomplete"]

#: The most an HTTP request head or a ClientHello may take.
MAX_HEAD = 16 * 1024
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


@dataclass(frozen=True)
class ClientHello:
    """A TLS ClientHello; ``server_name`` is its SNI (None if it has none)."""

    server_name: str | None


@dataclass(frozen=True)
class HttpHead:
    """An HTTP/1 request's head: method, target, version and headers (names in
    lowercase, in order); ``size`` is its length in bytes, blank line included."""

    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    size: int

    def header(self, name: str) -> str | None:
        values = [value for key, value in self.headers if key == name]
        return values[0] if len(values) == 1 else None

    def header_count(self, name: str) -> int:
        return sum(1 for key, _ in self.headers if key == name)


Sniffed = ClientHello | HttpHead | None


def _handshake(data: bytes) -> bytes | Incomplete | None:
    """The first handshake message, joined from the records it spans."""
    joined = bytearray()
    offset = 0
    while True:
        if len(joined) >= 4:
            need = 4 + int.from_bytes(joined[1:4], "big")
            if need > MAX_HEAD:
                return None
            if len(joined) >= need:
                return bytes(joined[:need])
        if len(data) < offset + 5:
            return INCOMPLETE
        kind, major, length = (
            data[offset],
            data[offset + 1],
            struct.unpack_from("!H", data, offset + 3)[0],
        )
        if kind != 0x16 or major != 3 or length == 0 or length > 16384 + 2048:
            return None
        if len(data) < offset + 5 + length:
            return INCOMPLETE
        joined += data[offset + 5 : offset + 5 + length]
        offset += 5 + length


def tls_client_hello(data: bytes) -> ClientHello | Incomplete | None:
    """The ClientHello that ``data`` starts with, INCOMPLETE, or None if it is none."""
    message = _handshake(data)
    if message is None or message == INCOMPLETE:
        return message
    assert isinstance(message, bytes)
    if message[0] != 1:
        return None
    body = message[4:]
    try:
        offset = 2 + 32  # version, random
        offset += 1 + body[offset]  # session id
        offset += 2 + struct.unpack_from("!H", body, offset)[0]  # cipher suites
        offset += 1 + body[offset]  # compression methods
        if offset == len(body):
            return ClientHello(None)
        (ext_total,) = struct.unpack_from("!H", body, offset)
        offset += 2
        end = offset + ext_total
        if end > len(body):
            return None
        names: list[str] = []
        while offset + 4 <= end:
            kind, length = struct.unpack_from("!HH", body, offset)
            offset += 4
            if kind == 0:
                names.extend(_server_names(body[offset : offset + length]))
            offset += length
        if offset != end or len(names) > 1:
            return None
    except (IndexError, struct.error, UnicodeDecodeError):
        return None
    return ClientHello(names[0] if names else None)


def _server_names(ext: bytes) -> list[str]:
    (total,) = struct.unpack_from("!H", ext)
    offset, names = 2, []
    if total + 2 != len(ext):
        raise IndexError("server_name list length")
    while offset < len(ext):
        kind, length = struct.unpack_from("!BH", ext, offset)
        raw = ext[offset + 3 : offset + 3 + length]
        if len(raw) != length:
            raise IndexError("server_name length")
        if kind == 0:
            names.append(raw.decode("ascii"))
        offset += 3 + length
    return names


def http_head(data: bytes) -> HttpHead | Incomplete | None:
    """The HTTP/1 request head ``data`` starts with, INCOMPLETE, or None."""
    first = data[:16]
    if b" " not in first:
        # a method still arriving, or none
        return INCOMPLETE if len(first) < 16 and _TOKEN.fullmatch(first) else None
    if not _TOKEN.fullmatch(first.split(b" ", 1)[0]):
        return None
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None if len(data) >= MAX_HEAD else INCOMPLETE
    if end + 4 > MAX_HEAD:
        return None
    try:
        text = data[:end].decode("latin-1")
        line, *fields = text.split("\r\n")
        method_s, target, version = line.split(" ")
    except ValueError:
        return None
    if not version.startswith("HTTP/1.") or not target or len(fields) > 100:
        return None
    headers: list[tuple[str, str]] = []
    for field in fields:
        name, colon, value = field.partition(":")
        if not colon or not _TOKEN.fullmatch(name.encode("latin-1")):
            return None
        headers.append((name.lower(), value.strip(" \t")))
    return HttpHead(method_s, target, version, headers, end + 4)


def sniff(data: bytes) -> Sniffed | Incomplete:
    """What ``data`` starts with: a ClientHello, an HTTP head, None, or INCOMPLETE."""
    if not data:
        return INCOMPLETE
    if data[0] == 0x16:
        return tls_client_hello(data)
    return http_head(data)


async def read_head(
    reader: asyncio.StreamReader, timeout: float, limit: int = MAX_HEAD, initial: bytes = b""
) -> tuple[bytes, Sniffed]:
    """Read until :func:`sniff` has an answer, ``limit`` bytes, EOF or ``timeout``
    seconds (then: what was read, and None); ``initial``: bytes already read."""
    data = initial
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(data) < limit:
        found = sniff(data)
        if found != INCOMPLETE:
            return data, found  # type: ignore[return-value]
        left = deadline - loop.time()
        if left <= 0:
            break
        try:
            chunk = await asyncio.wait_for(reader.read(limit - len(data)), left)
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    return data, None
