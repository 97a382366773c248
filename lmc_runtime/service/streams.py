"""Reading bounded request bodies as JSON, the NDJSON execution stream, and files
streamed out."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import IO, Any

import anyio
from fastapi import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ..messages import Message
from ..web.disconnect import stream_while_connected
from .drain import Drain, closed_replies
from .errors import MalformedRequest, RequestTooLarge
from .execution import Claim

__all__ = ["NdjsonExecution", "dump_line", "parse_json", "read_body", "streamed_file"]

#: How much of a file streamed out is read at a time.
_FILE_CHUNK = 64 * 1024

logger = logging.getLogger(__name__)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, or :class:`RequestTooLarge` once it passes ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestTooLarge("request body", limit)
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise RequestTooLarge("request body", limit)
    return bytes(body)


def parse_json(body: bytes) -> Any:
    """``body`` as JSON, or :class:`MalformedRequest` saying where it breaks."""
    try:
        return json.loads(body)
    except UnicodeDecodeError as exc:
        raise MalformedRequest(f"the body is not UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise MalformedRequest(
            f"the body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError as exc:
        raise MalformedRequest("the body is not JSON: nested too deeply") from exc
    except ValueError as exc:  # an integer too long to convert
        raise MalformedRequest(f"the body is not JSON: {exc}") from exc


def dump_line(data: Any) -> bytes:
    """One NDJSON line."""
    try:
        text = json.dumps(data, ensure_ascii=False)
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: escape them, still one valid line
        return (json.dumps(data) + "\n").encode("ascii")


class _Lines:
    """The NDJSON response, written as few times as it can be: its head goes with
    its first line, and its end with the final message (each write wakes the client)."""

    _HEAD = [
        (b"content-type", b"application/x-ndjson"),
        (b"cache-control", b"no-store"),
        (b"x-accel-buffering", b"no"),
    ]

    def __init__(self, send: Send) -> None:
        self._send = send
        self._started = False
        self.ended = False

    async def _start(self) -> None:
        if not self._started:
            self._started = True
            await self._send({"type": "http.response.start", "status": 200, "headers": self._HEAD})

    async def line(self, message: Message) -> None:
        if self.ended:
            logger.warning("a message after the final one is dropped: %.200r", message.content)
            return
        await self._start()
        self.ended = message.is_final
        body = dump_line(message.to_dict())
        await self._send({"type": "http.response.body", "body": body, "more_body": not self.ended})

    async def end(self) -> None:
        await self._start()
        if not self.ended:
            self.ended = True
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})


class NdjsonExecution(Response):
    """An ASGI response streaming an execution's messages as ``application/x-ndjson``.

    The messages are produced in the task that sends them, so a slow client
    slows nothing but its own stream (the watchdog keeps deadlines); a client
    that disconnects closes the stream, which stops the code. A shutdown stops
    it too, and the stream ends with a final ``closed`` message. The session's
    claim is released however the response ends, even if it never starts.
    """

    media_type = "application/x-ndjson"

    def __init__(
        self,
        messages: AsyncGenerator[Message, None],
        claim: Claim,
        drain: Drain,
        reply_to: str | None,
    ) -> None:
        super().__init__(media_type=self.media_type)
        self._messages = messages
        self._claim = claim
        self._drain = drain
        self._reply_to = reply_to

    async def _body(self, lines: _Lines) -> None:
        async with self._drain.execution() as run:
            with run:
                async for message in self._messages:
                    await lines.line(message)
            if run.cancelled_caught and not lines.ended:
                with anyio.CancelScope(shield=True):
                    await self._messages.aclose()
                for message in closed_replies(self._reply_to):
                    await lines.line(message)
        await lines.end()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await stream_while_connected(receive, lambda: self._body(_Lines(send)), self._messages)
        finally:
            self._claim.release()


def streamed_file(handle: IO[bytes], media_type: str) -> StreamingResponse:
    """The open file ``handle`` as the response's body, read in a worker thread a
    piece at a time and closed at the end, however the response ends."""

    async def content() -> AsyncIterator[bytes]:
        try:
            while piece := await anyio.to_thread.run_sync(handle.read, _FILE_CHUNK):
                yield piece
        finally:
            handle.close()

    return StreamingResponse(content(), media_type=media_type)
