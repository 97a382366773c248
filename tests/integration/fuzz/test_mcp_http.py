"""``lmc mcp --http`` given fuzzed POSTs in one MCP session: the JSON-RPC messages
of the stdio fuzz (tool calls with bad arguments, unknown tools and methods, bad
ids) and bodies that are not JSON-RPC at all (garbage, invalid UTF-8, every wire
input).

Each POST is answered below 500. Whatever the answer holds is JSON-RPC, and a
request with a valid id got exactly one response to it. After each body a
``ping`` is answered; after each batch the session still runs ``print(1)`` and
the server left no process behind.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .checks import GUARD, Tally, descendants, fuzz_settings, new_processes

pytest.importorskip("mcp_types", reason="the [mcp] extra (mcp 2.x) is not installed")

from ..mcp.client import HttpServer, http_server
from ..mcp.raw import headers, open_session
from .test_mcp import lines

pytestmark = pytest.mark.integration


class Session:
    """One MCP session of ``lmc mcp --http``, spoken to by hand."""

    def __init__(self, server: HttpServer, http: httpx.Client) -> None:
        self.server = server
        self.http = http
        self.headers = open_session(http, server.url)
        self.numbers = itertools.count()

    def post(self, body: bytes) -> tuple[int, list[dict[str, Any]]]:
        """POST ``body``; the status and the JSON-RPC messages of the answer."""
        response = self.http.post(
            self.server.url,
            content=body,
            headers={**self.headers, "Content-Type": "application/json"},
        )
        return response.status_code, _messages(response)

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """A request of ours, which must succeed; its one response."""
        request_id = f"own-{next(self.numbers)}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        status, messages = self.post(json.dumps(message).encode())
        assert status == 200, (status, messages)
        return _one_response(messages, request_id)


def _messages(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an answer: a JSON body, or the events of a stream."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        found = [
            json.loads(line.removeprefix("data:"))
            for line in response.text.splitlines()
            if line.startswith("data:") and line.removeprefix("data:").strip()
        ]
    elif kind.startswith("application/json") and response.content:
        body = response.json()
        found = body if isinstance(body, list) else [body]
    else:
        return []
    for message in found:
        if "error" in message and "jsonrpc" not in message:
            continue  # an HTTP problem body ({"error": {"code": ..., "message": ...}})
        assert message.get("jsonrpc") == "2.0", message
    return found


def _one_response(messages: list[dict[str, Any]], request_id: object) -> dict[str, Any]:
    responses = [m for m in messages if "method" not in m and m.get("id") == request_id]
    assert len(responses) == 1, (request_id, messages)
    (response,) = responses
    assert ("result" in response) != ("error" in response), response
    return response


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    with http_server() as server, httpx.Client(headers=headers(), timeout=GUARD) as http:
        opened = Session(server, http)
        assert _ran(opened, "print(0)")
        yield opened


def _ran(session: Session, code: str) -> bool:
    arguments = {"language": "python", "code": code}
    answer = session.request("tools/call", {"name": "execute", "arguments": arguments})
    return bool(answer["result"]["structuredContent"]["status"] == "ok")


def _send(session: Session, line: dict[str, Any] | bytes) -> None:
    """POST ``line``; a request with a valid id gets exactly one response."""
    if isinstance(line, bytes):
        status, _ = session.post(line)
        assert status < 500, status
        return
    request_id: Any = line.get("id")
    expected = request_id in ("str", "int")  # a valid id, made unique here
    if expected:
        number = next(session.numbers)
        request_id = f"fuzz-{number}" if request_id == "str" else 10**6 + number
        line = {**line, "id": request_id}
    status, messages = session.post(json.dumps(line).encode())
    assert status < 500, (status, messages)
    if expected and status == 200:
        _one_response(messages, request_id)


@fuzz_settings(10)
@given(batch=st.lists(lines(), min_size=1, max_size=6))
def test_every_post_leaves_the_session_answering(
    session: Session, batch: list[dict[str, Any] | bytes]
) -> None:
    tally = Tally("lmc mcp (HTTP)")
    process = session.server.process
    before = descendants(process.pid)
    for line in batch:
        label = "mcp http: garbage" if isinstance(line, bytes) else f"mcp http: {line['method']}"
        with tally.trying(label, line):
            _send(session, line)
            assert "result" in session.request("ping"), "the ping after the body was not answered"
            assert process.poll() is None, "lmc mcp --http ended"
    with tally.trying("health", "print(1) after the batch"):
        assert _ran(session, "print(1)")
        assert not new_processes(before, process.pid), "processes left behind"
