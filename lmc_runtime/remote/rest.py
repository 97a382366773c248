"""The HTTP side of the client: one ``httpx.AsyncClient`` per RemoteComputer.

Every call maps an error body to its typed exception (:mod:`.problems`) and a
broken or unreachable connection to :class:`~lmc_runtime.errors.ConnectionLost`.
An execution streams its NDJSON lines as they arrive.
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx

from ..errors import ConnectionLost, RemoteError
from .models import RemoteTimeouts
from .problems import USER_ERRORS, error_from_body
from .streams import StreamConnection

__all__ = ["Api", "ExecutionRefused", "parse_line"]

logger = logging.getLogger(__name__)


class ExecutionRefused(Exception):
    """An execution the server refused with one of the user's errors (``code``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _keepalive(idle: float) -> list[tuple[int, int, int]]:
    """Socket options that make a silent dead peer a read error in about ``idle`` x 3 s."""
    seconds = max(1, round(idle))
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", seconds), ("TCP_KEEPINTVL", seconds), ("TCP_KEEPCNT", 2)):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return options


def _verify(url: str) -> ssl.SSLContext | bool:
    """How the transport checks a server's certificate: httpx's default (the CA
    bundle) for an ``https`` URL. A plain ``http`` URL gets a context with no
    trust anchor, which fails every TLS handshake: the client sends every request
    to ``url`` and follows no redirect, so it never makes one. Loading the bundle
    took about 20 ms of every RemoteComputer's start, on a link with no TLS."""
    if httpx.URL(url).scheme == "https":
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED, hostname checked, no CA


class Api:
    """The ``/v1`` routes of one server, for the session ``session_id`` once it is set."""

    def __init__(self, url: str, token: str | None, timeouts: RemoteTimeouts) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeouts = timeouts
        self.session_id: str | None = None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        transport = httpx.AsyncHTTPTransport(
            verify=_verify(self.url), socket_options=_keepalive(timeouts.keepalive)
        )
        self.client = httpx.AsyncClient(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(timeouts.request, connect=timeouts.connect),
            transport=transport,
        )
        self.streams = StreamConnection(
            self.url,
            {**headers, "Content-Type": "application/json"},
            connect_timeout=timeouts.connect,
            socket_options=_keepalive(timeouts.keepalive),
        )

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def lost(self, exc: BaseException) -> ConnectionLost:
        where = f" (session {self.session_id})" if self.session_id else ""
        return ConnectionLost(
            f"the connection to {self.url} was lost{where}: {exc}", self.session_id
        )

    def path(self, tail: str = "") -> str:
        assert self.session_id is not None, "no session yet"
        return f"/v1/sessions/{self.session_id}{tail}"

    async def aclose(self) -> None:
        await self.streams.aclose()
        await self.client.aclose()

    async def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One request; its typed error unless it succeeded."""
        try:
            response = await self.client.request(method, url, **kwargs)
        except httpx.TransportError as exc:
            raise self.lost(exc) from exc
        if response.is_error:
            raise error_from_body(response.status_code, response.content)
        return response

    async def json(self, method: str, url: str, **kwargs: Any) -> Any:
        response = await self.request(method, url, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise RemoteError(f"{method} {url} answered no JSON", code="protocol") from exc

    @asynccontextmanager
    async def streamed(self, method: str, url: str, **kwargs: Any) -> AsyncIterator[httpx.Response]:
        """A streamed response, its typed error unless it succeeded."""
        try:
            async with self.client.stream(method, url, **kwargs) as response:
                if response.is_error:
                    raise error_from_body(response.status_code, await response.aread())
                yield response
        except httpx.TransportError as exc:
            raise self.lost(exc) from exc

    async def execute(
        self, body: dict[str, Any], timeout: float | None
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The messages of one execution, one dict per NDJSON line, as they arrive.

        :class:`ExecutionRefused` if the server refused the message as the user's
        error; reads wait at most the run's timeout plus the margin.
        """
        query = f"?timeout={float(timeout)!r}" if timeout is not None else ""
        content = json.dumps(body).encode("ascii")
        bound = self.timeouts.read_bound(timeout)
        post = self.streams.post(
            self.path("/execute") + query,
            content,
            read_timeout=bound,
            write_timeout=self.timeouts.request,
        )
        try:
            async with post as answer:
                if not 200 <= answer.status < 300:
                    raise error_from_body(answer.status, await answer.read())
                lines = _lines(answer.pieces())
                async for line in lines:
                    data = parse_line(line)
                    if _is_final(data):
                        # The response is read to its end before the caller, who may
                        # stop at this message, sees it: closing it early drops the
                        # connection while the server still winds the run down.
                        async for rest in lines:
                            logger.warning("a line after the final message: %.200r", rest)
                    yield data
        except RemoteError as exc:
            if exc.code in USER_ERRORS and exc.status == 400:
                raise ExecutionRefused(exc.code, exc.message) from exc
            raise
        except _BROKEN as exc:
            raise self.lost(exc) from exc


#: What a broken, closed, silent or garbled connection raises.
_BROKEN = (
    OSError,
    TimeoutError,
    anyio.EndOfStream,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.IncompleteRead,
    anyio.DelimiterNotFound,
)


async def _lines(pieces: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
    """The non-empty lines of a body, as bytes (JSON reads them as they are)."""
    pending = b""
    async for piece in pieces:
        pending += piece
        if b"\n" not in piece:
            continue
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def _is_final(data: dict[str, Any]) -> bool:
    return data.get("format") == "active_line" and data.get("content") is None


def parse_line(line: str | bytes) -> dict[str, Any]:
    """One message of the server as a dict; :class:`RemoteError` if it is not one."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise RemoteError(
            f"the server sent a line that is not JSON: {exc}", code="protocol"
        ) from exc
    if not isinstance(data, dict):
        raise RemoteError("the server sent a line that is not a message", code="protocol")
    return data
