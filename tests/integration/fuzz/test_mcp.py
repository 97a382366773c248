"""``lmc mcp`` over stdio given fuzzed JSON-RPC lines: tool calls with bad arguments,
unknown tools, requests with bad fields, and lines that are not JSON-RPC at all
(garbage, invalid UTF-8, every wire input).

After each line a ``ping`` with an id of its own is answered, and a request the
line made (a ``tools/call`` with a valid id) got exactly one response before it.
After each batch the server still runs ``print(1)`` and left no process behind.
Every line the server writes is JSON-RPC.
"""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .checks import GUARD, Tally, descendants, fuzz_settings, new_processes
from .strategies import bad_values, hostile_numbers, mix, odd_strings, wires

pytest.importorskip("mcp_types", reason="the [mcp] extra (mcp 2.x) is not installed")

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "0"},
    },
}


class Mcp:
    """``lmc mcp`` on pipes: lines in, JSON-RPC messages out (each checked as JSON)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.out: queue.Queue[bytes] = queue.Queue()
        self.numbers = itertools.count()
        self.answered: set[object] = set()
        #: The ids of the requests sent: each must get one response.
        self.issued: set[object] = set()
        assert process.stdout is not None
        threading.Thread(target=self._read, args=(process.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            self.out.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request; its response."""
        request_id = f"r-{next(self.numbers)}"
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.issued.add(request_id)
        self.send(json.dumps(message).encode())
        return self.wait_for(request_id)

    def wait_for(self, request_id: object) -> dict[str, Any]:
        """The response to ``request_id``; fails on a second response to one id."""
        while True:
            try:
                line = self.out.get(timeout=GUARD)
            except queue.Empty:
                raise AssertionError(f"no response to {request_id!r} in {GUARD} s") from None
            data = json.loads(line)  # every line the server writes is JSON
            assert data.get("jsonrpc") == "2.0", data
            if "method" in data:  # a notification or a request of the server's
                continue
            answered = data.get("id")
            if answered not in self.issued:  # a garbage line's own id, or none
                continue
            assert answered not in self.answered, f"a second response to {answered!r}"
            self.answered.add(answered)
            if answered == request_id:
                return dict(data)

    def execute(self, code: str) -> dict[str, Any]:
        answer = self.request("tools/call", {"name": "execute", "arguments": _print(code)})
        return dict(answer["result"])


def _print(code: str) -> dict[str, str]:
    return {"language": "python", "code": code}


@pytest.fixture(scope="module")
def mcp() -> Iterator[Mcp]:
    process = subprocess.Popen(
        [sys.executable, "-m", "lmc_runtime", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    try:
        server = Mcp(process)
        server.send(json.dumps(INITIALIZE).encode())
        assert json.loads(server.out.get(timeout=GUARD))["id"] == "init"
        server.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        assert server.execute("print(0)")["structuredContent"]["status"] == "ok"
        yield server
    finally:
        if process.stdin is not None:
            process.stdin.close()  # its input ends: it ends, and everything it started
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


_TOOLS = ["execute", "restart", "interrupt", "languages", "read_file", "nope", ""]


def _arguments() -> st.SearchStrategy[Any]:
    """Tool arguments: missing, of the wrong type, with unknown fields, odd values,
    hostile timeouts and odd languages (the code runs only in Python)."""
    language = st.sampled_from(["python", "cobol", "PYTHON", "applescript"]) | odd_strings(8)
    fields = {
        "language": language | bad_values(),
        "code": odd_strings() | st.just("print(3)") | bad_values(),
        "timeout": hostile_numbers() | bad_values() | st.just(1 << 1100),
        "path": odd_strings(),
        "extra": bad_values(),
    }
    chosen = st.sets(st.sampled_from(sorted(fields)))
    picked = chosen.flatmap(lambda keys: st.fixed_dictionaries({key: fields[key] for key in keys}))
    return mix(st.none(), bad_values(), picked, picked)


@st.composite
def _call(draw: st.DrawFn) -> dict[str, Any]:
    """A ``tools/call`` message (or another method), any of its fields made bad."""
    arguments = draw(_arguments())
    if isinstance(arguments, dict) and arguments.get("language") not in (None, "python"):
        arguments["code"] = "print(3)"  # only Python runs fuzzed code
    params: Any = {"name": draw(st.sampled_from(_TOOLS) | odd_strings(8)), "arguments": arguments}
    params = draw(st.just(params) | bad_values())
    method = draw(st.sampled_from(["tools/call", "tools/list", "nope", "resources/read"]))
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    not_an_id = bad_values().filter(lambda value: not isinstance(value, int | str))
    request_id = draw(st.sampled_from(["str", "int"]) | not_an_id | st.none() | st.booleans())
    if request_id is not None:
        message["id"] = request_id  # "str" and "int": a valid id, made unique when sent
    return message


def lines() -> st.SearchStrategy[dict[str, Any] | bytes]:
    """JSON-RPC messages, or lines that are not JSON-RPC (garbage, every wire input)."""
    return mix(_call(), _call(), wires().map(lambda wire: wire.data.replace(b"\n", b" ")))


def _answer(mcp: Mcp, line: dict[str, Any] | bytes) -> None:
    """Send ``line``; a request with a valid id must get exactly one response."""
    if isinstance(line, bytes):
        mcp.send(line)
        return
    request_id: Any = line.get("id")
    if request_id in ("str", "int"):
        number = next(mcp.numbers)
        request_id = f"fuzz-{number}" if request_id == "str" else number
        mcp.issued.add(request_id)
        mcp.send(json.dumps({**line, "id": request_id}).encode())
        response = mcp.wait_for(request_id)
        assert ("result" in response) != ("error" in response), response
    else:
        mcp.send(json.dumps(line).encode())


@fuzz_settings(12)
@given(batch=st.lists(lines(), min_size=1, max_size=8))
def test_every_line_leaves_the_server_answering(
    mcp: Mcp, batch: list[dict[str, Any] | bytes]
) -> None:
    tally = Tally("lmc mcp (stdio)")
    before = descendants(mcp.process.pid)
    for line in batch:
        label = "mcp: garbage" if isinstance(line, bytes) else f"mcp: {line['method']}"
        with tally.trying(label, line):
            _answer(mcp, line)
            assert "result" in mcp.request("ping"), "the ping after the line was not answered"
            assert mcp.process.poll() is None, "lmc mcp ended"
    with tally.trying("health", "print(1) after the batch"):
        result = mcp.execute("print(1)")
        assert result["structuredContent"]["status"] == "ok", result
        assert "1\n" in result["content"][0]["text"], result
        assert not new_processes(before, mcp.process.pid), "processes left behind"


def test_a_request_that_is_not_a_valid_message_is_answered(mcp: Mcp) -> None:
    """Regression: a request whose params were not an object (or any line the SDK's
    reader could not validate) was dropped without a response, and its client
    waited forever; garbage gets a parse error with a null id, and so does a
    request whose id holds a lone surrogate."""
    mcp.issued.add("bad-params")
    mcp.send(b'{"jsonrpc": "2.0", "id": "bad-params", "method": "tools/call", "params": false}')
    response = mcp.wait_for("bad-params")
    assert response["error"]["code"] == -32602, response
    assert "params" in response["error"]["message"]
    mcp.send(b"not json at all")
    assert "result" in mcp.request("ping")
    # An id holding a lone surrogate cannot be written back: answered with null,
    # where the error's id made the writer fail and the server end.
    mcp.send(b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/call", "params": 1}')
    assert "result" in mcp.request("ping")
    assert mcp.process.poll() is None
