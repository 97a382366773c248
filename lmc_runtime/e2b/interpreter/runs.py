"""One ``POST /execute``: the code run in its context, its LMC messages sent on as
E2B's events, one JSON line each, as they come.

The response streams from the task that serves it: a client that goes away (the
SDK's ``timeout`` ran out, its process died) is seen at once (``http.disconnect``)
and the run's stream is closed, which interrupts the code; the context is then
free for the next run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ...errors import LMCError
from ...intake import code_message
from ...messages import Message
from ...web.disconnect import stream_while_connected
from ..registry import E2BSandbox
from .contexts import Context, Contexts
from .events import Events, end_of_execution, error_event
from .languages import java_properties

__all__ = ["EventStream", "SandboxEnded", "run_events"]

logger = logging.getLogger(__name__)


class SandboxEnded(Exception):
    """The sandbox ended (killed, timed out) while the code ran: the response is
    cut, as E2B's is when its sandbox goes, and the SDK says the sandbox was killed."""


def _line(event: dict[str, Any]) -> bytes:
    try:
        return (json.dumps(event, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: escaped, still one line
        return (json.dumps(event) + "\n").encode("ascii")


class EventStream(Response):
    """E2B's stream of JSON lines, from ``events``; closed when the client leaves."""

    media_type = "application/x-ndjson"

    def __init__(self, events: AsyncGenerator[dict[str, Any], None]) -> None:
        super().__init__(media_type=self.media_type)
        self._events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if await stream_while_connected(receive, lambda: self._send_events(send), self._events):
            logger.info("an E2B client left during an execution: it is interrupted")

    async def _send_events(self, send: Send) -> None:
        headers = [(b"content-type", b"application/x-ndjson"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        try:
            async for event in self._events:
                await send({"type": "http.response.body", "body": _line(event), "more_body": True})
        except SandboxEnded:
            # No end of the body: the server closes the connection, as when a
            # sandbox is gone; the SDK then finds it killed and says so.
            logger.info("an execution's sandbox ended while it ran: its response is cut")
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _code(sandbox: E2BSandbox, context: Context, code: str, envs: dict[str, str] | None) -> Message:
    extras = {"env": envs} if envs else None
    if context.language == "java":
        last, context.java_properties = context.java_properties, frozenset(envs or ())
        code = java_properties(sandbox.env_vars, envs or {}, last) + code
    return code_message(
        {
            "role": "assistant",
            "type": "code",
            "format": context.lmc_language,
            "content": code,
            "extras": extras,
        }
    )


async def _messages(
    sandbox: E2BSandbox,
    contexts: Contexts,
    context: Context,
    message: Message,
    timeout: float | None,
) -> AsyncGenerator[Message, None]:
    """The run's LMC messages: in the session (recorded) for a default context,
    else in the context's own Computer; one run at a time in each."""
    if context.default:
        async with contexts.session_lock:
            session = sandbox.session
            claim = session.acquire()  # SessionBusy: the lmc API runs code in it
            async with _closed_after(session.stream(message, timeout, claim)) as stream:
                async for out in stream:
                    yield out
        return
    async with context.lock:
        computer = context.computer
        if computer is None:
            raise LMCError("this context was removed")
        async with _closed_after(computer.arun(message, timeout=timeout)) as stream:
            async for out in stream:
                yield out


@asynccontextmanager
async def _closed_after(
    stream: AsyncGenerator[Message, None],
) -> AsyncIterator[AsyncGenerator[Message, None]]:
    """``stream``, closed on the way out even when the caller is cancelled (its
    ``finally`` interrupts the code and frees the session or the context)."""
    try:
        yield stream
    finally:
        with anyio.CancelScope(shield=True):
            await stream.aclose()


async def run_events(
    sandbox: E2BSandbox,
    contexts: Contexts,
    context: Context,
    code: str,
    envs: dict[str, str] | None,
    timeout: float | None,
) -> AsyncGenerator[dict[str, Any], None]:
    """The E2B events of running ``code`` in ``context``; always ends with
    ``end_of_execution``, a refusal of the runtime's told as an ``error``."""
    events = Events()
    try:
        message = _code(sandbox, context, code, envs)
        messages = _messages(sandbox, contexts, context, message, timeout)
        try:
            async for out in messages:
                for event in events.feed(out):
                    yield event
        finally:
            with anyio.CancelScope(shield=True):
                await messages.aclose()
    except LMCError as exc:
        yield error_event(type(exc).__name__, str(exc))
    if events.status == "closed" and contexts.door.sandboxes.find(sandbox.id) is None:
        raise SandboxEnded()
    if events.execution_count is not None:
        yield {"type": "number_of_executions", "execution_count": events.execution_count}
    yield end_of_execution()
