"""The server side of the Connect protocol, as envd's services need it.

A :class:`Service` names its RPCs and their handlers::

    filesystem = Service("filesystem.Filesystem")

    @filesystem.unary("Stat", StatRequest)
    async def stat(request: StatRequest, call: Call) -> StatResponse: ...

    @filesystem.server_stream("WatchDir", WatchDirRequest)
    async def watch(request: WatchDirRequest, call: Call) -> AsyncIterator[WatchDirResponse]: ...

    @process.client_stream("StreamInput", StreamInputRequest)
    async def stream_input(requests: AsyncIterator[StreamInputRequest], call: Call) -> ...: ...

and :meth:`Service.routes` are mounted (``POST /filesystem.Filesystem/Stat``).
Unary calls are ``application/proto`` or ``application/json``, answered in kind;
errors are Connect's JSON with the code's HTTP status. Streams are
``application/connect+proto`` or ``+json``: enveloped messages, then an
end-of-stream envelope with ``{}`` or ``{"error": ...}``. ``Connect-Timeout-Ms``
bounds a call (``deadline_exceeded``); gzip bodies are read, answers are not
compressed. A handler raises :class:`~.codes.ConnectError`, or any of lmc's
refusals (:func:`~.codes.connect_error_of`): never a 500 with a traceback.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from google.protobuf.message import Message
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ...web.disconnect import cancel_on_disconnect
from .codes import ConnectError, connect_error_of
from .wire import END_STREAM, MAX_MESSAGE, Codec, EnvelopeReader, codec_for, decompress, envelope
from .wire import error_body as end_body

__all__ = ["Call", "ConnectError", "Service"]

logger = logging.getLogger(__name__)

Req = TypeVar("Req", bound=Message)
Unary = Callable[[Any, "Call"], Awaitable[Message]]
Streaming = Callable[[Any, "Call"], AsyncGenerator[Message, None]]
ClientStreaming = Callable[[AsyncIterator[Any], "Call"], Awaitable[Message]]
#: One of the three kinds of handler a service registers.
Handler = TypeVar("Handler", Unary, Streaming, ClientStreaming)

#: The longest ``Connect-Timeout-Ms`` honoured as a bound (a day); 0 or none: no bound.
_MAX_TIMEOUT_MS = 86_400_000


@dataclass
class Call:
    """What a handler knows of its call besides the message."""

    request: Request
    #: Seconds left until ``Connect-Timeout-Ms`` expires, or None when unbounded.
    timeout: float | None


def error_response(error: ConnectError) -> JSONResponse:
    """A unary call's refusal."""
    return JSONResponse(error.wire(), status_code=error.status)


class Service:
    """A Connect service, ``package.Service``, and its RPCs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._routes: list[Route] = []

    def routes(self) -> list[Route]:
        return list(self._routes)

    def _add(self, method: str, endpoint: Callable[[Request], Awaitable[Response]]) -> None:
        path = f"/{self.name}/{method}"
        self._routes.append(Route(path, endpoint, methods=["POST"], name=path))

    def _registrar(
        self,
        method: str,
        kind: type[Req],
        serve: Callable[[Request, type[Req], Handler], Awaitable[Response]],
    ) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            async def endpoint(request: Request) -> Response:
                return await serve(request, kind, handler)

            self._add(method, endpoint)
            return handler

        return register

    def unary(self, method: str, kind: type[Req]) -> Callable[[Unary], Unary]:
        return self._registrar(method, kind, _unary)

    def server_stream(self, method: str, kind: type[Req]) -> Callable[[Streaming], Streaming]:
        return self._registrar(method, kind, _server_stream)

    def client_stream(
        self, method: str, kind: type[Req]
    ) -> Callable[[ClientStreaming], ClientStreaming]:
        return self._registrar(method, kind, _client_stream)


def _timeout(request: Request) -> float | None:
    """The call's bound (``Connect-Timeout-Ms``), once its protocol version is checked."""
    version = request.headers.get("connect-protocol-version", "1")
    if version != "1":
        raise ConnectError("invalid_argument", f"Connect-Protocol-Version {version[:20]!r} != 1")
    header = request.headers.get("connect-timeout-ms")
    if not header:
        return None
    if len(header) > 10 or not header.isdigit():
        raise ConnectError("invalid_argument", f"Connect-Timeout-Ms is no number: {header[:20]!r}")
    millis = int(header)
    return None if millis == 0 or millis > _MAX_TIMEOUT_MS else millis / 1000


async def _read_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_MESSAGE:
        raise ConnectError("resource_exhausted", f"the request is larger than {MAX_MESSAGE} bytes")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_MESSAGE:
                raise ConnectError(
                    "resource_exhausted", f"the request is larger than {MAX_MESSAGE} bytes"
                )
    except ClientDisconnect:
        raise ConnectError("canceled", "the client left before the request ended") from None
    return bytes(body)


async def _unary(request: Request, kind: type[Req], handler: Unary) -> Response:
    codec = codec_for(request.headers.get("content-type", ""), stream=False)
    if codec is None:
        # Connect: an unknown content type is answered 415, in no codec.
        accepted = {"Accept-Post": "application/json, application/proto"}
        return Response(status_code=415, headers=accepted)
    try:
        timeout = _timeout(request)
        body = decompress(await _read_body(request), request.headers.get("content-encoding"))
        message = codec.decode(body, kind)
        with anyio.fail_after(timeout if timeout is not None else math.inf):
            answer = await handler(message, Call(request, timeout))
    except TimeoutError:
        return error_response(ConnectError("deadline_exceeded", "the call ran out of time"))
    except Exception as exc:
        return error_response(connect_error_of(exc))
    return Response(codec.encode(answer), media_type=f"application/{codec.name}")


def _stream_codec(request: Request) -> Codec | None:
    return codec_for(request.headers.get("content-type", ""), stream=True)


def _unsupported() -> Response:
    return Response(
        status_code=415,
        headers={"Accept-Post": "application/connect+json, application/connect+proto"},
    )


async def _messages(request: Request, codec: Codec, kind: type[Req]) -> AsyncGenerator[Req, None]:
    """The messages of a stream's request body."""
    reader = EnvelopeReader(request.stream(), request.headers.get("connect-content-encoding"))
    while True:
        try:
            data = await reader.next()
        except ClientDisconnect:
            raise ConnectError("canceled", "the client left before the request ended") from None
        if data is None:
            return
        yield codec.decode(data, kind)


async def _first_message(request: Request, codec: Codec, kind: type[Req]) -> Req:
    """The one message of a server stream's request body."""
    async with aclosing(_messages(request, codec, kind)) as messages:
        async for message in messages:
            return message
    raise ConnectError("invalid_argument", "the request stream holds no message")


async def _stream_call(
    request: Request, run: Callable[[Codec, float | None], Awaitable[Response]]
) -> Response:
    """A stream's call: ``run`` with its codec and timeout (no codec: 415); what
    it raises ends the stream at once, with the error."""
    codec = _stream_codec(request)
    if codec is None:
        return _unsupported()
    try:
        return await run(codec, _timeout(request))
    except TimeoutError:
        return _ended(codec, ConnectError("deadline_exceeded", "the call ran out of time"))
    except Exception as exc:
        return _ended(codec, connect_error_of(exc))


async def _server_stream(request: Request, kind: type[Req], handler: Streaming) -> Response:
    async def run(codec: Codec, timeout: float | None) -> Response:
        message = await _first_message(request, codec, kind)
        return _streamed(codec, handler(message, Call(request, timeout)), timeout)

    return await _stream_call(request, run)


async def _client_stream(request: Request, kind: type[Req], handler: ClientStreaming) -> Response:
    async def run(codec: Codec, timeout: float | None) -> Response:
        with anyio.fail_after(timeout if timeout is not None else math.inf):
            async with aclosing(_messages(request, codec, kind)) as requests:
                answer = await handler(requests, Call(request, timeout))
        body = envelope(codec.encode(answer)) + envelope(end_body(None), END_STREAM)
        return Response(body, media_type=f"application/connect+{codec.name}")

    return await _stream_call(request, run)


def _ended(codec: Codec, error: ConnectError) -> Response:
    """A stream that ends at once, with ``error``."""
    return Response(
        envelope(end_body(error), END_STREAM), media_type=f"application/connect+{codec.name}"
    )


def _streamed(
    codec: Codec, messages: AsyncGenerator[Message, None], timeout: float | None
) -> Response:
    return _Stream(codec, messages, timeout)


class _Stream(Response):
    """A server stream's answer: the handler's messages, then the end of the
    stream. The handler is closed (its ``finally`` runs) when the client goes
    away, even while it has nothing to send, and when the timeout expires."""

    def __init__(
        self, codec: Codec, messages: AsyncGenerator[Message, None], timeout: float | None
    ):
        super().__init__(media_type=f"application/connect+{codec.name}")
        # Streamed: no Content-Length (Response gave it the empty body's, 0).
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self._codec = codec
        self._messages = messages
        self._timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        async with anyio.create_task_group() as group:
            group.start_soon(cancel_on_disconnect, receive, group.cancel_scope)
            try:
                await self._pump(send)
            finally:
                group.cancel_scope.cancel()

    async def _pump(self, send: Send) -> None:
        error: ConnectError | None = None
        limit = math.inf if self._timeout is None else anyio.current_time() + self._timeout
        try:
            async with aclosing(self._messages) as stream:
                while True:
                    with anyio.fail_after(max(0.0, limit - anyio.current_time())):
                        try:
                            message = await anext(stream)
                        except StopAsyncIteration:
                            break
                    data = envelope(self._codec.encode(message))
                    await send({"type": "http.response.body", "body": data, "more_body": True})
        except TimeoutError:
            error = ConnectError("deadline_exceeded", "the stream ran out of time")
        except Exception as exc:
            error = connect_error_of(exc)
        end = envelope(end_body(error), END_STREAM)
        await send({"type": "http.response.body", "body": end, "more_body": False})
