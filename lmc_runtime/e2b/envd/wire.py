"""The bytes of the Connect protocol (https://connectrpc.com/docs/protocol), as
envd's server side reads and writes them: codecs (binary protobuf and JSON),
compression (identity and gzip, bounded), and the 5-byte envelopes of streams.

E2B's SDKs speak JSON without compression (the Python SDK's connectrpc client
with its own JSON codec, the JS SDK's connect-web with ``useBinaryFormat:
false``); the rest is here so that any Connect client is understood.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from .codes import ConnectError

__all__ = [
    "END_STREAM",
    "MAX_MESSAGE",
    "Codec",
    "EnvelopeReader",
    "codec_for",
    "decompress",
    "envelope",
    "error_body",
]

M = TypeVar("M", bound=Message)

#: The largest message read or written, after decompression. envd's messages are
#: small: file contents go over the HTTP ``/files`` route, not over RPC.
MAX_MESSAGE = 4 * 1024 * 1024

#: Envelope flags.
COMPRESSED = 0x01
END_STREAM = 0x02

_HEAD = struct.Struct(">BI")


@dataclass(frozen=True)
class Codec:
    """A message codec: ``name`` as in the content type (``proto`` or ``json``)."""

    name: str

    def decode(self, data: bytes, kind: type[M]) -> M:
        message: M = kind()
        try:
            if self.name == "json":
                json_format.Parse(data or b"{}", message, ignore_unknown_fields=True)
            else:
                message.ParseFromString(data)
        except (json_format.ParseError, DecodeError, UnicodeDecodeError, ValueError) as exc:
            raise ConnectError(
                "invalid_argument", f"the {kind.__name__} message cannot be read: {exc}"
            ) from None
        return message

    def encode(self, message: Message) -> bytes:
        if self.name == "json":
            body = json_format.MessageToDict(message)
            return json.dumps(body, separators=(",", ":")).encode()
        data: bytes = message.SerializeToString()
        return data


_CODECS = {"proto": Codec("proto"), "json": Codec("json")}


def codec_for(content_type: str, *, stream: bool) -> Codec | None:
    """The codec a request's content type names (``application/json``,
    ``application/connect+proto``, ...), or None for one this server lacks."""
    kind = content_type.partition(";")[0].strip().lower()
    prefix = "application/connect+" if stream else "application/"
    if not kind.startswith(prefix):
        return None
    return _CODECS.get(kind[len(prefix) :])


def decompress(data: bytes, encoding: str | None) -> bytes:
    """``data`` decoded from ``encoding`` (None or ``identity``: as it is; ``gzip``),
    never more than :data:`MAX_MESSAGE` bytes out (a small bomb stays small)."""
    if encoding in (None, "", "identity"):
        if len(data) > MAX_MESSAGE:
            raise _too_large()
        return data
    if encoding != "gzip":
        raise ConnectError("unimplemented", f"unknown compression {encoding[:40]!r}; use gzip")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, MAX_MESSAGE + 1)
    except zlib.error as exc:
        raise ConnectError("invalid_argument", f"the gzip data is corrupt: {exc}") from None
    if len(out) > MAX_MESSAGE:
        raise _too_large()
    if not inflater.eof:
        raise ConnectError("invalid_argument", "the gzip data ends early")
    return out


def _too_large() -> ConnectError:
    return ConnectError(
        "resource_exhausted", f"a message is larger than {MAX_MESSAGE} bytes, the most envd reads"
    )


def envelope(data: bytes, flags: int = 0) -> bytes:
    """One envelope of a stream."""
    return _HEAD.pack(flags, len(data)) + data


def error_body(error: ConnectError | None) -> bytes:
    """The end-of-stream message: ``{}``, or ``{"error": {...}}``."""
    end: dict[str, Any] = {} if error is None else {"error": error.wire()}
    return json.dumps(end, separators=(",", ":")).encode()


class EnvelopeReader:
    """The messages of a streamed request body, read envelope by envelope as the
    chunks of ``body`` come; each at most :data:`MAX_MESSAGE` bytes."""

    def __init__(self, body: AsyncIterator[bytes], encoding: str | None) -> None:
        self._body = body
        self._encoding = encoding
        self._buffer = bytearray()
        self._ended = False

    async def _fill(self, size: int) -> bool:
        while len(self._buffer) < size:
            if self._ended:
                return False
            try:
                chunk = await self._body.__anext__()
            except StopAsyncIteration:
                self._ended = True
                continue
            self._buffer += chunk
        return True

    async def next(self) -> bytes | None:
        """The next message's bytes, or None at the end of the stream."""
        if not await self._fill(_HEAD.size):
            if self._buffer:
                raise ConnectError("invalid_argument", "the request stream ends inside an envelope")
            return None
        flags, size = _HEAD.unpack_from(self._buffer)
        if size > MAX_MESSAGE:
            raise _too_large()
        if not await self._fill(_HEAD.size + size):
            raise ConnectError("invalid_argument", "the request stream ends inside an envelope")
        data = bytes(self._buffer[_HEAD.size : _HEAD.size + size])
        del self._buffer[: _HEAD.size + size]
        if flags & END_STREAM:
            return None
        if flags & COMPRESSED:
            if self._encoding in (None, "", "identity"):
                raise ConnectError(
                    "invalid_argument", "a compressed envelope, but no Connect-Content-Encoding"
                )
            data = decompress(data, self._encoding)
        return data
