"""``WS /v1/sessions/{id}/ws``: code messages in, computer messages out.

Authentication: ``Authorization: Bearer``, ``?token=``, or an ``lmc.token.<token>``
subprotocol. A browser Origin must be allowed. Chunk framing (start/content/end,
see :mod:`lmc_runtime.adapters.chunks`) is used on request: ``?chunks=1``, or a first
message ``{"hello": {"chunks": true}}`` (a hello frame with any other field, or
a ``chunks`` that is not a boolean, is not understood); chunked input is
accepted either way.
``{"control": "interrupt"}`` interrupts the running code. A code message's
``extras.timeout`` (seconds, positive; at most the session's ``wall_seconds``) is
its run's timeout, as ``?timeout=`` is over HTTP; it is taken off the message
before the message runs. Anything malformed is answered with a "not understood"
computer message; the connection stays open.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import reprlib
from typing import Any

import anyio
from anyio.abc import TaskGroup
from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse

from .. import replies
from ..adapters.chunks import ChunkAssembler, to_chunks
from ..error_codes import ErrorCode
from ..errors import MessageError, TokenRejected
from ..intake import code_message, raw_id
from ..messages import Message
from .drain import closed_replies, drain_of
from .errors import SessionBusy, SessionEnded
from .problems import Problem, error_response, problem_for
from .session import ServiceSession
from .state import service_of

__all__ = ["ws_router"]

logger = logging.getLogger(__name__)


async def _refuse(websocket: WebSocket, response: JSONResponse, close_code: int) -> None:
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(response)
    else:
        await websocket.close(code=close_code)


#: What sending to or receiving from a client that has gone away raises.
_GONE = (WebSocketDisconnect, OSError)


class _Connection:
    """One accepted WebSocket on one session."""

    def __init__(
        self, websocket: WebSocket, session: ServiceSession, chunks: bool, max_bytes: int
    ) -> None:
        self.websocket = websocket
        self.drain = drain_of(websocket)
        self.session = session
        self.chunks = chunks
        self.max_bytes = max_bytes
        self.wall_seconds = session.policy.limits.wall_seconds
        self.assembler = ChunkAssembler()
        self._assembled_bytes = 0
        self._dropping = False
        # Uncontended but when a run's output and a reply to the client cross:
        # taken without passing the event loop a turn for each message.
        self._send_lock = anyio.Lock(fast_acquire=True)
        self._running = False

    async def send(self, message: Message) -> None:
        frames = list(to_chunks(message)) if self.chunks else [message.to_dict()]
        async with self._send_lock:
            for frame in frames:
                await self.websocket.send_text(json.dumps(frame))

    async def serve(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_end, tg)
            try:
                while True:
                    frame = await self.websocket.receive()
                    if frame["type"] == "websocket.disconnect":
                        break
                    text = frame.get("text")
                    if text is None:
                        await self.send(
                            replies.not_understood(
                                "binary frames are not understood: send each message as "
                                "a JSON text frame",
                                None,
                                status="malformed",
                            )
                        )
                        continue
                    await self._handle(text, tg)
            except _GONE:
                logger.debug("a session WebSocket went away")
            except Exception:
                logger.exception("a session WebSocket failed")
                with contextlib.suppress(*_GONE, RuntimeError):
                    await self.websocket.close(code=1011, reason="internal error")
            tg.cancel_scope.cancel()

    async def _watch_end(self, tg: TaskGroup) -> None:
        await self.session.ended.wait()
        try:
            await self.send(self.session.end_notice())
            reason = (self.session.end_reason or "session ended")[:120]
            await self.websocket.close(code=1001, reason=reason)
        except Exception:
            logger.debug("could not tell a client the session ended", exc_info=True)
        tg.cancel_scope.cancel()

    async def _handle(self, text: str, tg: TaskGroup) -> None:
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            await self.send(
                replies.not_understood(
                    f"not JSON: {exc.msg} at column {exc.colno}", None, status="malformed"
                )
            )
            return
        except (ValueError, RecursionError) as exc:  # a huge integer, deep nesting
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            await self.send(replies.not_understood(f"not JSON: {reason}", None, status="malformed"))
            return
        if isinstance(data, dict) and "hello" in data and "role" not in data:
            try:
                self.chunks = _hello_chunks(data)
            except MessageError as exc:
                await self.send(
                    replies.not_understood(exc.reason, raw_id(data), status="malformed")
                )
            return
        if isinstance(data, dict) and "control" in data and "role" not in data:
            await self._control(data["control"])
            return
        reply_to = raw_id(data)
        try:
            if isinstance(data, dict) and self._is_chunk(data):
                data = self._assemble(data, len(text))
                if data is None:
                    return
            message, timeout = _run_timeout(code_message(data), self.wall_seconds)
        except MessageError as exc:
            await self.send(replies.not_understood(exc.reason, reply_to, status="malformed"))
            return
        try:
            claim = self.session.acquire()
        except (SessionBusy, SessionEnded) as exc:
            status = "busy" if isinstance(exc, SessionBusy) else "closed"
            await self.send(replies.notice(exc.message, status, message.id))
            return
        tg.start_soon(self._execute, message, timeout, claim, tg)

    def _is_chunk(self, data: dict[str, Any]) -> bool:
        return "start" in data or "end" in data or self.assembler.open or self._dropping

    def _assemble(self, chunk: dict[str, Any], size: int) -> Message | None:
        """Feed one chunk; the whole message at its end. A message past the size
        limit is refused once, and its remaining chunks up to its end are dropped."""
        if self._dropping:
            if "start" not in chunk:
                self._dropping = "end" not in chunk
                return None
            self._dropping = False
        self._assembled_bytes = size + (self._assembled_bytes if self.assembler.open else 0)
        if self._assembled_bytes > self.max_bytes:
            self.assembler = ChunkAssembler()
            self._dropping = "end" not in chunk
            raise MessageError(
                f"the chunked message is larger than {self.max_bytes} bytes: refused, "
                "and its remaining chunks are dropped up to its end chunk"
            )
        return self.assembler.feed(chunk)

    async def _execute(
        self, message: Message, timeout: float | None, claim: Any, tg: TaskGroup
    ) -> None:
        stream = self.session.stream(message, timeout, claim)
        try:
            async with self.drain.execution() as run:
                with run:
                    async for out in stream:
                        await self.send(out)
                if run.cancelled_caught:  # the service is shutting down
                    with anyio.CancelScope(shield=True):
                        await stream.aclose()
                    for out in closed_replies(message.id):
                        await self.send(out)
        except _GONE:  # the client went away: the stream is closed, which stops the code
            tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            claim.release()

    async def _control(self, command: object) -> None:
        computer = self.session.computer
        if command == "interrupt" and computer is not None:
            await computer.ainterrupt()
            self.session.touch()
            return
        await self.send(
            replies.not_understood(
                f"unknown control {reprlib.repr(command)}; known: interrupt", None
            )
        )


def _hello_chunks(frame: dict[str, Any]) -> bool:
    """Whether the hello ``frame`` (``{"hello": {"chunks": true}}``) asks for
    chunk framing; :class:`MessageError` for any other field, or a value of
    another type."""
    hello = frame["hello"]
    if len(frame) != 1 or not isinstance(hello, dict) or not set(hello) <= {"chunks"}:
        raise MessageError(
            f'a hello frame is {{"hello": {{"chunks": true or false}}}}, not {reprlib.repr(frame)}'
        )
    chunks = hello.get("chunks", False)
    if not isinstance(chunks, bool):
        raise MessageError(f"hello.chunks must be true or false, not {reprlib.repr(chunks)}")
    return chunks


def _run_timeout(message: Message, wall: float | None) -> tuple[Message, float | None]:
    """The message without its ``extras.timeout``, and that timeout (at most
    ``wall``); :class:`MessageError` if it is not a positive number of seconds."""
    extras = dict(message.extras or {})
    if "timeout" not in extras:
        return message, None
    given = extras.pop("timeout")
    timeout = _seconds(given)
    if timeout is None:
        raise MessageError(
            f"extras.timeout must be a positive number of seconds, not {reprlib.repr(given)}"
        )
    if wall is not None:
        timeout = min(timeout, wall)
    return message.model_copy(update={"extras": extras or None}), timeout


def _seconds(value: object) -> float | None:
    """``value`` as a finite positive number of seconds, else None: also for an
    integer too large for a float, which JSON allows (converting it overflows)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def ws_router() -> APIRouter:
    """The WebSocket route."""
    router = APIRouter()

    @router.websocket("/v1/sessions/{session_id}/ws")
    async def session_ws(websocket: WebSocket, session_id: str) -> None:
        try:
            session = _admit(websocket, session_id)
        except Exception as exc:
            problem = problem_for(exc)
            if problem is None:
                logger.error("internal error on a WebSocket handshake", exc_info=exc)
                problem = Problem(500, ErrorCode.INTERNAL, "internal error; see the server log")
            close_code = 1011 if problem.status >= 500 else 1008
            response = error_response(problem.status, problem.code, problem.message)
            await _refuse(websocket, response, close_code)
            return
        offered = list(websocket.scope.get("subprotocols", []))
        subprotocol = "lmc" if any(p == "lmc" or p.startswith("lmc.") for p in offered) else None
        await websocket.accept(subprotocol=subprotocol)
        chunks = websocket.query_params.get("chunks", "").lower() in ("1", "true", "yes")
        session.touch()
        max_bytes = service_of(websocket).settings.max_request_bytes
        await _Connection(websocket, session, chunks, max_bytes).serve()

    return router


def _admit(websocket: WebSocket, session_id: str) -> ServiceSession:
    """The session a handshake may open; the service's refusal (origin, token,
    session) if none."""
    service = service_of(websocket)
    service.auth.check_browser(websocket.headers)
    offered = list(websocket.scope.get("subprotocols", []))
    token = service.auth.websocket_token(websocket.headers, websocket.query_params, offered)
    if not service.auth.valid(token):
        message = "missing bearer token" if token is None else "invalid bearer token"
        raise TokenRejected(message)
    return service.manager.get(session_id)
