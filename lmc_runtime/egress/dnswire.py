"""DNS messages on the wire (RFC 1035), as much as the gateway needs: queries of
one question, answers of A and AAAA records. Stdlib only, bounded, and safe on
any bytes: a malformed message gives None, never an exception.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

__all__ = [
    "AAAA",
    "FORMERR",
    "NOERROR",
    "NXDOMAIN",
    "REFUSED",
    "SERVFAIL",
    "A",
    "Query",
    "build_query",
    "build_response",
    "parse_query",
    "parse_response",
    "rcode_only",
]

A, AAAA, CNAME = 1, 28, 5
CLASS_IN = 1
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, REFUSED = 0, 1, 2, 3, 5

#: The header: id, flags, and the counts of the four sections.
_HEADER = struct.Struct("!HHHHHH")
_QR, _OPCODE, _AA, _TC, _RD, _RA = 0x8000, 0x7800, 0x0400, 0x0200, 0x0100, 0x0080
#: Compression pointers followed in one name, at most (a loop ends there).
_MAX_JUMPS = 32
#: Records read from one answer, at most.
_MAX_RECORDS = 64
MAX_MESSAGE = 65535


@dataclass(frozen=True)
class Query:
    """A query's id, flags, its one question (name in lowercase, no final dot)."""

    id: int
    flags: int
    name: str
    qtype: int
    qclass: int
    #: The question's bytes as sent (echoed in the answer).
    question: bytes

    @property
    def opcode(self) -> int:
        return (self.flags & _OPCODE) >> 11


def _read_name(data: bytes, offset: int) -> tuple[str, int] | None:
    """The name at ``offset`` and the offset after it, or None if malformed."""
    labels: list[str] = []
    end: int | None = None
    jumps = 0
    total = 0
    while True:
        if offset >= len(data):
            return None
        length = data[offset]
        if length & 0xC0 == 0xC0:
            if offset + 1 >= len(data) or jumps >= _MAX_JUMPS:
                return None
            if end is None:
                end = offset + 2
            offset = ((length & 0x3F) << 8) | data[offset + 1]
            jumps += 1
            continue
        if length & 0xC0:
            return None
        offset += 1
        if length == 0:
            break
        label = data[offset : offset + length]
        if len(label) != length:
            return None
        total += length + 1
        if total > 255:
            return None
        labels.append(label.decode("latin-1").lower())
        offset += length
    return ".".join(labels), (offset if end is None else end)


def _encode_name(name: str) -> bytes | None:
    out = bytearray()
    for label in name.rstrip(".").split(".") if name.strip(".") else []:
        raw = label.encode("ascii", "replace")
        if not 0 < len(raw) < 64:
            return None
        out += bytes([len(raw)]) + raw
    out.append(0)
    return bytes(out) if len(out) <= 255 else None


def parse_query(data: bytes) -> Query | None:
    """The query ``data`` holds, or None if it is no well-formed query of one question."""
    if len(data) < _HEADER.size:
        return None
    ident, flags, qdcount, _an, _ns, _ar = _HEADER.unpack_from(data)
    if flags & _QR or qdcount != 1:
        return None
    read = _read_name(data, _HEADER.size)
    if read is None or read[1] + 4 > len(data):
        return None
    name, offset = read
    qtype, qclass = struct.unpack_from("!HH", data, offset)
    return Query(ident, flags, name, qtype, qclass, data[_HEADER.size : offset + 4])


def rcode_only(data: bytes, rcode: int) -> bytes | None:
    """An answer of ``rcode`` alone to what may not even be a query (FORMERR,
    REFUSED): None if ``data`` has no header or is itself an answer."""
    if len(data) < _HEADER.size:
        return None
    ident, flags = struct.unpack_from("!HH", data)
    if flags & _QR:
        return None
    return _HEADER.pack(ident, _QR | (flags & (_OPCODE | _RD)) | _RA | rcode, 0, 0, 0, 0)


def build_response(
    query: Query, rcode: int, addresses: list[str], ttl: int, limit: int = MAX_MESSAGE
) -> bytes:
    """The answer to ``query``: ``rcode``, and one record per address of its type;
    truncated (TC set) where it would be longer than ``limit`` bytes."""
    records = bytearray()
    count = 0
    truncated = 0
    room = limit - _HEADER.size - len(query.question)
    for text in addresses:
        address = ipaddress.ip_address(text)
        kind = A if address.version == 4 else AAAA
        if kind != query.qtype:
            continue
        # the name as a pointer to the question's (offset 12)
        record = struct.pack("!HHHIH", 0xC00C, kind, CLASS_IN, ttl, len(address.packed))
        record += address.packed
        if len(records) + len(record) > room:
            truncated = _TC
            break
        records += record
        count += 1
    flags = _QR | _AA | (query.flags & (_OPCODE | _RD)) | _RA | truncated | rcode
    return _HEADER.pack(query.id, flags, 1, count, 0, 0) + query.question + bytes(records)


def build_query(ident: int, name: str, qtype: int) -> bytes | None:
    """A recursive query for ``name``'s records of ``qtype`` (None: no such name)."""
    encoded = _encode_name(name)
    if encoded is None:
        return None
    return _HEADER.pack(ident, _RD, 1, 0, 0, 0) + encoded + struct.pack("!HH", qtype, CLASS_IN)


def parse_response(data: bytes, ident: int, qtype: int) -> tuple[int, bool, list[str]] | None:
    """An answer's rcode, whether it was truncated, and its records' addresses of
    ``qtype``; None if it is malformed or not the answer to query ``ident``."""
    if len(data) < _HEADER.size:
        return None
    got, flags, qdcount, ancount, _ns, _ar = _HEADER.unpack_from(data)
    if got != ident or not flags & _QR:
        return None
    offset = _HEADER.size
    for _ in range(min(qdcount, 4)):
        read = _read_name(data, offset)
        if read is None:
            return None
        offset = read[1] + 4
    found: list[str] = []
    for _ in range(min(ancount, _MAX_RECORDS)):
        read = _read_name(data, offset)
        if read is None or read[1] + 10 > len(data):
            break
        kind, klass, _ttl, length = struct.unpack_from("!HHIH", data, read[1])
        start = read[1] + 10
        rdata = data[start : start + length]
        if len(rdata) != length:
            break
        offset = start + length
        if klass == CLASS_IN and kind == qtype and length == (4 if kind == A else 16):
            found.append(str(ipaddress.ip_address(rdata)))
    return flags & 0x000F, bool(flags & _TC), found
