"""An upload is answered once its body has come: a refusal the headers decide
(``user=root``, a path outside the home, a sandbox that is gone) waits for the
rest of the body, read and dropped, before it is sent.

HTTP lets a server answer before it has read the request's body, but the HTTP
client of E2B's Python SDK (reqwest, through pyqwest) may break off reading
such an early answer while it still sends the body, when the answer's head and
body come apart (uvicorn writes them separately; under load the client reads
between them): the SDK raises ``httpx.ReadError`` ("error reading a body from
connection") instead of the refusal. Against a server answering at the headers
in two writes, 48 of 400 of the SDK's uploads failed so; answering after the
body, 0 of 800.

envd (Go's net/http) does the same: it reads up to 256 KiB of a body its
handler left before it answers. Here up to :data:`DRAIN_BYTES`, for at most
:data:`DRAIN_SECONDS`; past either bound, the answer is sent with
``Connection: close`` and the connection closed after it (the rest of such a
body is not worth reading), as Go does.
"""

from __future__ import annotations

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["DRAIN_BYTES", "DRAIN_SECONDS", "answered_after_body"]

#: The most of a refused upload's body that is read before its answer.
DRAIN_BYTES = 1 << 20
#: The longest the answer waits for the rest of the body, in seconds.
DRAIN_SECONDS = 5.0


class _Body:
    """The request's body messages, as the application and the drain read them."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        #: Whether the body has ended (its last message read, or the client gone).
        self.ended = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.ended = True
        return message

    async def drain(self) -> bool:
        """Read and drop the rest of the body, within the bounds; whether it ended."""
        read = 0
        with anyio.move_on_after(DRAIN_SECONDS):
            while not self.ended and read <= DRAIN_BYTES:
                read += len((await self.receive()).get("body", b""))
        return self.ended


def _closing(message: Message) -> Message:
    """``message`` (a response's start) with ``Connection: close``."""
    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
    return {**message, "headers": [*headers, (b"connection", b"close")]}


def answered_after_body(app: ASGIApp) -> ASGIApp:
    """``app``, whose answer to an HTTP request starts only once the request's
    body has come (or a bound was passed: then the connection closes after it)."""

    async def answered(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        body = _Body(receive)

        async def answer(message: Message) -> None:
            early = message["type"] == "http.response.start" and not body.ended
            if early and not await body.drain():
                message = _closing(message)
            await send(message)

        await app(scope, body.receive, answer)

    return answered
