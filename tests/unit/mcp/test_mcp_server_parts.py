"""The parts of ``lmc mcp`` that need no interpreter: results, tools, the pool, the guard."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp_types", reason="the [mcp] extra (mcp 2.x) is not installed")

from mcp_types import ImageContent, TextContent

from lmc_runtime import replies
from lmc_runtime.mcp.http import McpGuard
from lmc_runtime.mcp.pool import Workspaces
from lmc_runtime.mcp.results import Report
from lmc_runtime.mcp.tools import Execute, parse_arguments, tool_list
from lmc_runtime.mcp.workspace import Workspace
from lmc_runtime.web.auth import Authenticator


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _report(*messages: Any) -> Report:
    report = Report()
    for message in messages:
        report.add(message)
    return report


def test_output_is_joined_images_and_html_are_blocks_of_their_own() -> None:
    png = base64.b64encode(b"\x89PNG fake").decode()
    result = _report(
        replies.output("a", "m1"),
        replies.output("b\n", "m1"),
        replies.image(png, "image/png", "m1"),
        replies.html("<b>c</b>", "m1"),
        replies.output("c", "m1"),
        replies.active_line(None, "m1", status=replies.Status.OK, execution_count=3),
    ).result()
    first, image, html, last, summary = result.content
    assert isinstance(first, TextContent) and first.text == "ab\n"
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert image.data == png
    assert isinstance(html, TextContent) and html.text == "<b>c</b>"
    assert isinstance(last, TextContent) and last.text == "c"
    assert isinstance(summary, TextContent)
    assert json.loads(summary.text) == {"status": "ok", "execution_count": 3}
    assert result.structured_content == {"status": "ok", "execution_count": 3}
    assert not result.is_error


def test_a_reply_that_cannot_run_is_an_error_with_its_status() -> None:
    result = _report(replies.not_understood("unknown language 'cobol'", "m1")).result()
    assert result.is_error
    assert result.structured_content == {"status": "not_understood"}
    assert isinstance(result.content[0], TextContent)
    assert result.content[0].text.startswith("[lmc] not understood:")


def test_a_timeout_is_an_error_result() -> None:
    final = replies.active_line(None, "m1", status=replies.Status.TIMEOUT)
    result = _report(final).result()
    assert result.is_error and result.structured_content == {"status": "timeout"}


def test_file_tools_are_offered_only_with_files() -> None:
    assert [t.name for t in tool_list(False)] == ["execute", "interrupt", "restart", "languages"]
    with_files = [t.name for t in tool_list(True)]
    assert {"read_file", "write_file", "list_files"} <= set(with_files)
    with pytest.raises(ValueError, match="no tool 'read_file'"):
        parse_arguments("read_file", {"path": "x"}, has_files=False)


def test_arguments_are_checked_against_the_tool() -> None:
    parsed = parse_arguments("execute", {"language": "python", "code": "1"}, has_files=False)
    assert isinstance(parsed, Execute) and parsed.timeout is None
    with pytest.raises(ValueError, match="timeout"):
        parse_arguments("execute", {"language": "py", "code": "1", "timeout": 0}, False)
    with pytest.raises(ValueError, match="stdin: Extra inputs are not permitted"):
        parse_arguments("execute", {"language": "py", "code": "1", "stdin": "x"}, False)


@dataclass
class _Opener:
    """Opens workspaces of nothing, counting them."""

    opened: int = 0
    closed: int = 0
    has_files: bool = field(default=False)
    has_outputs: bool = field(default=False)

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Workspace]:
        self.opened += 1
        try:
            yield Workspace(computer=None)  # type: ignore[arg-type]
        finally:
            self.closed += 1


@pytest.mark.anyio
async def test_a_session_keeps_its_workspace_until_it_ends() -> None:
    opener = _Opener()
    async with Workspaces(opener).running() as pool:
        first = await pool.get("a")
        assert await pool.get("a") is first and opener.opened == 1
        other = await pool.get("b")
        assert other is not first and opener.opened == 2
        pool.end("a")
        with anyio.fail_after(10):
            await first.closed.wait()
        again = await pool.get("a")
        assert again is not first and opener.opened == 3
    assert opener.closed == 3


@pytest.mark.anyio
async def test_an_idle_workspace_is_closed() -> None:
    opener = _Opener()
    async with Workspaces(opener, idle_timeout=0.05).running() as pool:
        slot = await pool.get("a")
        with anyio.fail_after(10):
            await slot.closed.wait()
        assert opener.closed == 1


async def _inner(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _through_guard(guard: McpGuard, headers: dict[str, str]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http",
        "method": "POST",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await guard(scope, receive, send)
    return sent


@pytest.mark.anyio
async def test_the_guard_wants_the_token() -> None:
    guard = McpGuard(_inner, Authenticator("secret"), Workspaces(_Opener()))
    refused = await _through_guard(guard, {"host": "127.0.0.1:1"})
    assert refused[0]["status"] == 401
    assert json.loads(refused[1]["body"])["error"]["code"] == "unauthorized"
    wrong = await _through_guard(guard, {"authorization": "Bearer nope"})
    assert wrong[0]["status"] == 401
    allowed = await _through_guard(guard, {"authorization": "Bearer secret"})
    assert allowed[0]["status"] == 204
