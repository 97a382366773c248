"""A kernel's messages read off the wire, as jupyter-client's ``Session.deserialize``
reads them but for its dates.

``deserialize`` parses every string of a message's header and parent header as a
possible ISO 8601 date (with dateutil): 32 of its 53 µs a message, some 0.2 ms of
each ``print(1)``'s round trip. Nothing here reads a date, so the header's
``date`` stays the string the kernel sent. The signature is checked with the
session's key, and a message of another major version of the protocol is
adapted, as ``deserialize`` does.
"""

from __future__ import annotations

from hmac import compare_digest
from typing import Any

from jupyter_client.adapter import adapt

__all__ = ["deserialize"]

#: The protocol's major version a message needs no adapting for.
_MAJOR = "5"


def deserialize(session: Any, frames: list[bytes], *, content: bool = True) -> dict[str, Any]:
    """``frames`` (identities first) as a message dict; its content still packed
    unless ``content``. ValueError or TypeError if it is malformed or its
    signature is wrong."""
    parts = session.feed_identities(frames)[1]
    if len(parts) < 5:
        raise TypeError(f"malformed message, must have at least 5 elements, not {len(parts)}")
    if session.auth is not None:
        signature = parts[0]
        if not signature:
            raise ValueError("Unsigned Message")
        if not compare_digest(signature, session.sign(parts[1:5])):
            raise ValueError(f"Invalid Signature: {signature!r}")
    unpack = session.unpack
    header = unpack(parts[1])
    message: dict[str, Any] = {
        "header": header,
        "msg_id": header["msg_id"],
        "msg_type": header["msg_type"],
        "parent_header": unpack(parts[2]),
        "metadata": unpack(parts[3]),
        "content": unpack(parts[4]) if content else parts[4],
        "buffers": [memoryview(part) for part in parts[5:]],
    }
    if str(header.get("version", _MAJOR)).split(".")[0] != _MAJOR:
        return adapt(message)
    return message
