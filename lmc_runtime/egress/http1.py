"""HTTP/1.1 requests relayed from a sandbox to an upstream, with placeholders
replaced in their headers.

Requests are read one after another (keep-alive, pipelined or not): each head
(bounded), then its body as its framing says (``Content-Length``, or chunked,
passed through chunk by chunk). Responses are not parsed: they go back to the
client as the upstream sends them. A request that asks to switch protocols
(``Upgrade``) turns the rest of the connection into a plain relay. A malformed
or ambiguous request (bare line feeds, folded headers, both ``Content-Length``
and ``Transfer-Encoding``) ends the connection with a 400: never forwarded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .splice import origin_form
from .tls import CHUNK, Channel

__all__ = ["MAX_HEAD", "BadRequest", "Requests", "error_response", "relay_requests"]

#: The largest request head (request line and headers), and chunk-size line.
MAX_HEAD = 64 * 1024
_MAX_LINE = 4096

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_REQUEST_LINE = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (\S+) HTTP/1\.([01])")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})(;[^\r\n]*)?")


#: Headers whose placeholders stay placeholders: the framing and hop-by-hop
#: fields the relay and the upstream act on (a numeric value as a
#: ``Content-Length`` or ``Range`` would be found by how much body is sent or
#: answered), and the ones servers routinely put back in their answers (a
#: redirect's ``Location`` from ``Host``, CORS from ``Origin``, a request id
#: or the ``User-Agent`` in an error's text). No API takes its key in them.
UNREPLACED = frozenset(
    {
        b"host",
        b"content-length",
        b"transfer-encoding",
        b"connection",
        b"keep-alive",
        b"upgrade",
        b"te",
        b"trailer",
        b"expect",
        b"range",
        b"if-range",
        b"origin",
        b"referer",
        b"forwarded",
        b"x-forwarded-host",
        b"x-forwarded-for",
        b"x-forwarded-proto",
        b"via",
        b"user-agent",
        b"x-request-id",
        b"x-correlation-id",
    }
)


class BadRequest(Exception):
    """A request the relay will not forward (its reason, for the client)."""


def error_response(status: int, reason: str, message: str) -> bytes:
    """A complete response that closes the connection."""
    body = (message + "\n").encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


class Requests:
    """A buffered reader of HTTP requests from ``channel``."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.buffer = bytearray()

    async def _more(self) -> bool:
        data = await self.channel.read(CHUNK)
        self.buffer += data
        return bool(data)

    async def head(self) -> bytes | None:
        """The next request's head with its blank line; None at a clean end."""
        start = 0
        while True:
            end = self.buffer.find(b"\r\n\r\n", start)
            if end >= 0:
                if end + 4 > MAX_HEAD:
                    raise BadRequest("the request's head is too large")
                head = bytes(self.buffer[: end + 4])
                del self.buffer[: end + 4]
                return head
            if len(self.buffer) > MAX_HEAD:
                raise BadRequest("the request's head is too large")
            start = max(0, len(self.buffer) - 3)
            if not await self._more():
                if self.buffer.strip():
                    raise BadRequest("the connection ended inside a request's head")
                return None

    async def line(self) -> bytes:
        """The next line, with its CRLF."""
        while True:
            end = self.buffer.find(b"\r\n")
            if end >= 0:
                line = bytes(self.buffer[: end + 2])
                del self.buffer[: end + 2]
                return line
            if len(self.buffer) > _MAX_LINE:
                raise BadRequest("a chunk's size line is too long")
            if not await self._more():
                raise BadRequest("the connection ended inside a request's body")

    async def copy(self, length: int, out: Channel) -> None:
        """Copy exactly ``length`` bytes of body to ``out``."""
        while length > 0:
            if not self.buffer and not await self._more():
                raise BadRequest("the connection ended inside a request's body")
            piece = bytes(self.buffer[:length])
            del self.buffer[: len(piece)]
            length -= len(piece)
            await out.write(piece)

    async def rest(self, out: Channel) -> None:
        """Copy everything that comes, to the end."""
        while self.buffer or await self._more():
            data = bytes(self.buffer)
            self.buffer.clear()
            await out.write(data)


def _framing(fields: list[tuple[bytes, bytes]]) -> int | None:
    """The body's length (0: none), or None for chunked."""
    encodings = [value for name, value in fields if name == b"transfer-encoding"]
    lengths = {value.strip() for name, value in fields if name == b"content-length"}
    if encodings:
        if lengths:
            raise BadRequest("a request has both Content-Length and Transfer-Encoding")
        if [e.strip().lower() for e in encodings] != [b"chunked"]:
            raise BadRequest("the only transfer coding relayed is 'chunked'")
        return None
    if not lengths:
        return 0
    if len(lengths) > 1 or not next(iter(lengths)).isdigit():
        raise BadRequest("a request's Content-Length is invalid")
    return int(next(iter(lengths)))


def rewrite_head(
    head: bytes, replacements: Mapping[bytes, bytes]
) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """``head`` with every ``replacements`` key replaced in its header values
    (never in its request line, nor in :data:`UNREPLACED`'s), and its parsed
    ``(lowercase name, value)`` fields;
    :class:`BadRequest` for a head that is not plain HTTP/1.x."""
    lines = head[:-4].split(b"\r\n")
    if any(b"\n" in line or b"\r" in line or b"\0" in line for line in lines):
        raise BadRequest("a bare CR, LF or NUL in a request's head")
    request_line = _REQUEST_LINE.fullmatch(lines[0])
    if request_line is None:
        raise BadRequest("not an HTTP/1.x request line")
    method, target, minor = request_line.groups()
    if method.upper() in (b"TRACE", b"TRACK"):
        raise BadRequest("TRACE echoes a request back, secrets and all: not relayed here")
    # an absolute URI (a proxy's form) in the origin's: a server would route it
    # by the URI's host, not by the name the broker dialled and checked
    target = origin_form(target.decode("latin-1")).encode("latin-1")
    out, fields = [b"%s %s HTTP/1.%s" % (method, target, minor)], []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            raise BadRequest("a malformed header line (folded, or without a name)")
        if name.lower() not in UNREPLACED:
            for placeholder, secret in replacements.items():
                value = value.replace(placeholder, secret)
        fields.append((name.lower(), value.strip(b" \t")))
        out.append(name + b":" + value)
    return b"\r\n".join(out) + b"\r\n\r\n", fields


async def _chunked(requests: Requests, out: Channel) -> None:
    while True:
        line = await requests.line()
        match = _CHUNK_SIZE.fullmatch(line[:-2])
        if match is None:
            raise BadRequest("a malformed chunk size")
        await out.write(line)
        size = int(match.group(1), 16)
        if size == 0:
            break
        await requests.copy(size + 2, out)  # the chunk and its CRLF
    while True:  # trailers, then the blank line
        line = await requests.line()
        await out.write(line)
        if line == b"\r\n":
            return


async def relay_requests(
    requests: Requests, upstream: Channel, replacements: Mapping[bytes, bytes]
) -> None:
    """Forward every request from ``requests`` to ``upstream``, placeholders
    replaced in their headers, until the client's end (or an upgrade's)."""
    while True:
        head = await requests.head()
        if head is None:
            return
        rewritten, fields = rewrite_head(head, replacements)
        length = _framing(fields)
        await upstream.write(rewritten)
        if length is None:
            await _chunked(requests, upstream)
        else:
            await requests.copy(length, upstream)
        connection = b",".join(value for name, value in fields if name == b"connection")
        tokens = {token.strip().lower() for token in connection.split(b",")}
        if b"upgrade" in tokens and any(name == b"upgrade" for name, _ in fields):
            await requests.rest(upstream)
            return
