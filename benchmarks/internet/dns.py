"""The DNS wire format, as far as the test internet's server needs it (stdlib only).

A query is read for its id, name and type; an answer carries A and AAAA
records, or none with NXDOMAIN.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

__all__ = ["AAAA", "A", "Question", "answer", "parse_question", "query"]

A, AAAA = 1, 28
_NXDOMAIN = 3


@dataclass(frozen=True)
class Question:
    """The first question of a DNS message."""

    ident: int
    name: str
    qtype: int
    raw: bytes  # the question section as it came (name, type, class)


def _read_name(message: bytes, offset: int) -> tuple[str, int]:
    labels: list[str] = []
    while True:
        if offset >= len(message):
            raise ValueError("truncated name")
        length = message[offset]
        if length & 0xC0:
            raise ValueError("compressed names in a question are not expected")
        offset += 1
        if length == 0:
            return ".".join(labels), offset
        labels.append(message[offset : offset + length].decode("ascii", "replace"))
        offset += length


def parse_question(message: bytes) -> Question:
    """The question of ``message``; ValueError if it is not a query we can read."""
    if len(message) < 12:
        raise ValueError("shorter than a DNS header")
    ident, _flags, count = struct.unpack("!HHH", message[:6])
    if count < 1:
        raise ValueError("no question")
    name, end = _read_name(message, 12)
    if end + 4 > len(message):
        raise ValueError("truncated question")
    (qtype,) = struct.unpack("!H", message[end : end + 2])
    return Question(ident, name.lower().rstrip("."), qtype, message[12 : end + 4])


def answer(question: Question, addresses: list[str] | None, ttl: int) -> bytes:
    """The reply to ``question``: ``addresses`` of its type (None: NXDOMAIN)."""
    records = []
    for address in addresses or []:
        packed = ipaddress.ip_address(address).packed
        rtype = A if len(packed) == 4 else AAAA
        if rtype != question.qtype:
            continue
        records.append(struct.pack("!HHHIH", 0xC00C, rtype, 1, ttl, len(packed)) + packed)
    flags = 0x8180 | (_NXDOMAIN if addresses is None else 0)
    header = struct.pack("!HHHHHH", question.ident, flags, 1, len(records), 0, 0)
    return header + question.raw + b"".join(records)


def query(name: str, qtype: int = A, ident: int = 0x1234) -> bytes:
    """A recursive query for ``name`` (what a client sends)."""
    encoded = b"".join(
        bytes([len(label)]) + label.encode("ascii") for label in name.rstrip(".").split(".")
    )
    header = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0)
    return header + encoded + b"\0" + struct.pack("!HH", qtype, 1)
