"""The WebSocket transport: one connection per RemoteComputer, reused across runs.

Code messages go out as JSON text frames and computer messages come back the
same way; ``{"control": "interrupt"}`` interrupts. The connection opens at the
first run and is opened again at the next run after it broke, or after a run
that was abandoned before its end (closing it stops that code on the server).
Pings every ``RemoteTimeouts.ping`` seconds find a dead peer. A run's timeout
goes with its code message (``extras.timeout``) and the server keeps it, so the
run ends ``timeout``; should a run go on past its timeout plus the margin (a
server that does not keep it), the client interrupts it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from ..errors import ConnectionLost, RemoteBusy, RemoteError, RemoteSessionEnded
from .problems import error_from_body
from .rest import Api, parse_line
from .wire import ANSWERED

__all__ = ["WebSocketChannel"]

logger = logging.getLogger(__name__)

_INTERRUPT = json.dumps({"control": "interrupt"})


def _ws_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return {"http": "ws", "https": "wss"}.get(scheme, scheme) + sep + rest


def _ends(data: dict[str, Any], reply_to: str) -> bool:
    """Whether ``data`` is the last message of the run answering ``reply_to``."""
    if data.get("in_reply_to") != reply_to:
        return False
    if data.get("format") == "active_line" and data.get("content") is None:
        return True
    extras = data.get("extras") or {}
    return data.get("format") == "output" and extras.get("status") in ANSWERED


class WebSocketChannel:
    """The WebSocket of one session."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._socket: ClientConnection | None = None
        self._running = False

    async def _connection(self) -> ClientConnection:
        if self._socket is not None:
            return self._socket
        timeouts = self.api.timeouts
        url = _ws_url(self.api.url) + self.api.path("/ws")
        try:
            self._socket = await connect(
                url,
                additional_headers=self.api.headers,
                open_timeout=timeouts.connect,
                ping_interval=timeouts.ping,
                ping_timeout=timeouts.ping,
                close_timeout=timeouts.ping,
                compression=None,
                max_size=None,
                proxy=None,
            )
        except InvalidStatus as exc:
            response = exc.response
            raise error_from_body(response.status_code, bytes(response.body or b"")) from exc
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise self.api.lost(exc) from exc
        return self._socket

    async def aclose(self) -> None:
        sock, self._socket = self._socket, None
        if sock is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.api.timeouts.ping):
                await sock.close()

    async def interrupt(self) -> bool:
        """Send an interrupt if a run is streaming here; whether one was sent."""
        if self._socket is None or not self._running:
            return False
        try:
            await self._socket.send(_INTERRUPT)
        except ConnectionClosed as exc:
            raise self.api.lost(exc) from exc
        return True

    def _closed(self, exc: ConnectionClosed) -> RemoteError:
        received = exc.rcvd
        if received is not None and received.code == 1001:
            session = self.api.session_id or "?"
            return RemoteSessionEnded(
                f"session {session} has ended: {received.reason or 'closed by the server'}",
                status=None,
                code="session_ended",
            )
        return self.api.lost(exc)

    async def execute(
        self, body: dict[str, Any], timeout: float | None
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The messages of one execution, as they arrive."""
        if self._running:
            raise RemoteBusy("this RemoteComputer is already running code", code="busy")
        sock = await self._connection()
        self._running = True
        finished = False
        if timeout is not None:
            body = {**body, "extras": {**(body.get("extras") or {}), "timeout": timeout}}
        try:
            await sock.send(json.dumps(body))
            async for data in self._receive(sock, str(body["id"]), timeout):
                yield data
            finished = True
        except ConnectionClosed as exc:
            raise self._closed(exc) from exc
        finally:
            self._running = False
            if not finished:
                await self.aclose()

    async def _receive(
        self, sock: ClientConnection, reply_to: str, timeout: float | None
    ) -> AsyncGenerator[dict[str, Any], None]:
        bound = self.api.timeouts.read_bound(timeout)
        deadline = None if bound is None or timeout is None else time.monotonic() + bound
        answered = False  # a refusal comes first, in place of the run's messages
        while True:
            wait = bound
            if deadline is not None:
                wait = max(0.0, deadline - time.monotonic())
            text: str | bytes | None = None
            with anyio.move_on_after(wait):
                text = await sock.recv()
            if text is None:
                if deadline is None:
                    raise ConnectionLost(
                        f"no message from {self.api.url} in {wait:g} s", self.api.session_id
                    )
                logger.info("run %s went on past its timeout: interrupting it", reply_to)
                await sock.send(_INTERRUPT)
                deadline = None
                continue
            data = parse_line(text)
            status = (data.get("extras") or {}).get("status")
            if data.get("in_reply_to") == reply_to:
                if not answered and _is_refusal(data, status):
                    raise _refusal(status, str(data.get("content") or ""))
                answered = True
            yield data
            if _ends(data, reply_to):
                return


def _is_refusal(data: dict[str, Any], status: object) -> bool:
    """A notice that the run was refused (busy, or the session gone); a shutdown's
    notice says the state is lost and comes with a final message."""
    extras = data.get("extras") or {}
    return status in ("busy", "closed") and "state_lost" not in extras


def _refusal(status: object, text: str) -> RemoteError:
    message = text.removeprefix("[lmc] ").strip()
    if status == "busy":
        return RemoteBusy(message, code="busy")
    return RemoteSessionEnded(message, code="session_ended")
