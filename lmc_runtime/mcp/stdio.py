"""The stdio transport of ``lmc mcp``: the SDK's, with every request answered.

The SDK's stdio reader drops a line that is not a valid JSON-RPC message (it
hands the server an exception, which it logs), so a request with a valid id
and a malformed part (``params`` that are not an object...) was never
answered and its client waited forever. Here each line is checked first: one
that is not JSON is answered with a parse error, and one that is JSON but not a
valid message with an invalid-request or invalid-params error naming its id
(``null`` when it has none; a notification, which has no id, is not answered).

stdin is read from a private duplicate of fd 0, which is pointed at the null
device while serving (the SDK does the same with what it reads itself), so that
no process the code starts can read the client's messages.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Iterator
from io import TextIOWrapper
from typing import Any, cast

import anyio
import mcp_types as types
from anyio.abc import ObjectSendStream
from pydantic import ValidationError

__all__ = ["Intake", "diverted_stdin", "refusal"]

logger = logging.getLogger(__name__)

#: The largest request id echoed in an error (a longer one is answered with null).
_MAX_ID_CHARS = 1024


@contextlib.contextmanager
def diverted_stdin() -> Iterator[TextIOWrapper]:
    """stdin as UTF-8 text read from a private descriptor; fd 0 is the null
    device meanwhile, and stdin again after."""
    private = os.dup(0)
    os.set_inheritable(private, False)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        with os.fdopen(private, "rb", closefd=False) as raw:
            yield TextIOWrapper(raw, encoding="utf-8", errors="replace")
    finally:
        # The private descriptor stays open: a worker thread may still be blocked
        # reading it, and a closed descriptor could be reused under it.
        os.dup2(private, 0)


def _request_id(data: Any) -> str | int | None:
    """The id to answer ``data`` with: None for one that could not be written back
    (a lone surrogate, which no UTF-8 holds, made the writer fail and the server end)."""
    value = data.get("id") if isinstance(data, dict) else None
    if isinstance(value, str) and len(value) <= _MAX_ID_CHARS:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return value
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**63:
        return value
    return None


def _reason(exc: ValidationError, data: Any) -> str:
    """What is wrong, from the errors of the kind of message ``data`` tries to be."""
    kind = "JSONRPCRequest" if isinstance(data, dict) and "id" in data else "JSONRPCNotification"
    errors = exc.errors(include_url=False)
    if isinstance(data, dict) and "method" in data:
        errors = [error for error in errors if error["loc"][:1] == (kind,)] or errors
    said = dict.fromkeys(
        f"{'.'.join(str(p) for p in error['loc'][1:]) or 'message'}: {error['msg']}"
        for error in errors
    )
    return "; ".join(list(said)[:3])[:500]


def refusal(line: str) -> types.JSONRPCError | None:
    """The error answering ``line`` if it is not a valid JSON-RPC message; None if
    it is one, or if it is a notification (nothing answers those)."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        problem = exc
    else:
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        error = types.ErrorData(code=types.PARSE_ERROR, message="Parse error: the line is not JSON")
        return types.JSONRPCError(jsonrpc="2.0", id=None, error=error)
    if isinstance(data, dict) and "method" in data and "id" not in data:
        return None
    request_id = _request_id(data)
    wrong_params = isinstance(data, dict) and "params" in data and "method" in data
    code = (
        types.INVALID_PARAMS if wrong_params and request_id is not None else types.INVALID_REQUEST
    )
    message = f"Invalid request: {_reason(problem, data)}"
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


class Intake:
    """stdin's lines for the SDK's reader, without those :func:`refusal` answers;
    their errors wait in :attr:`errors` for :meth:`answer` to send."""

    def __init__(self, lines: anyio.AsyncFile[str]) -> None:
        self._lines = lines
        # Bounded: a client that sends garbage faster than it reads the answers waits.
        self._send, self._errors = anyio.create_memory_object_stream[types.JSONRPCError](64)

    async def __aiter__(self) -> AsyncIterator[str]:
        async with self._send:
            async for line in self._lines:
                error = refusal(line) if line.strip() else None
                if error is None:
                    yield line
                else:
                    logger.debug("answered a line that is not a JSON-RPC message")
                    with contextlib.suppress(anyio.BrokenResourceError):  # no more answers
                        await self._send.send(error)

    def as_file(self) -> anyio.AsyncFile[str]:
        """This, typed as what the SDK's ``stdio_server`` reads (it only iterates it)."""
        return cast(anyio.AsyncFile[str], self)

    async def answer(self, write: ObjectSendStream[Any]) -> None:
        """Send each error to the client, through the transport's own writer."""
        from mcp.shared.message import SessionMessage

        async with self._errors:
            async for error in self._errors:
                try:
                    await write.send(SessionMessage(error))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
