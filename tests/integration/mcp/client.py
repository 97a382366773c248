"""The SDK's own MCP client, driven from synchronous tests, and ``lmc mcp`` servers for it.

A :class:`Client` is a ``ClientSession`` living in a blocking portal's event
loop (a thread of its own), so that one session can be shared by a module's
tests and a call can be cancelled from the test while it runs.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import psutil
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, ImageContent, TextContent

from ...lifeline import tie

REPO = Path(__file__).resolve().parents[3]
TOKEN = "mcp-test-token-0123456789"
#: An MCP ``initialize`` request, for tests that speak the protocol by hand.
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
#: What a streamable HTTP client accepts.
ACCEPT = {"Accept": "application/json, text/event-stream"}

#: Called with each progress notification's message.
OnProgress = Callable[[str], None]


def texts(result: CallToolResult) -> str:
    """All the text content of a result, joined."""
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def images(result: CallToolResult) -> list[bytes]:
    """The decoded images of a result."""
    return [
        base64.b64decode(block.data) for block in result.content if isinstance(block, ImageContent)
    ]


def status(result: CallToolResult) -> Any:
    return (result.structured_content or {}).get("status")


class Client:
    """One initialized MCP session, called from synchronous code."""

    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal = portal
        self.session = session

    def tools(self) -> list[str]:
        return [tool.name for tool in self.portal.call(self.session.list_tools).tools]

    async def _call(
        self, name: str, arguments: dict[str, Any], on_progress: OnProgress | None
    ) -> CallToolResult:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                on_progress(message or "")

        return await self.session.call_tool(
            name,
            arguments,
            read_timeout_seconds=120,
            progress_callback=progress if on_progress is not None else None,
        )

    def call(
        self, name: str, on_progress: OnProgress | None = None, **arguments: Any
    ) -> CallToolResult:
        return self.portal.call(self._call, name, arguments, on_progress)

    def start(
        self, name: str, on_progress: OnProgress | None = None, **arguments: Any
    ) -> Future[CallToolResult]:
        """Call ``name`` in the background; cancelling the future cancels the call."""
        return self.portal.start_task_soon(self._call, name, arguments, on_progress)

    def execute(self, code: str, language: str = "python", **arguments: Any) -> CallToolResult:
        return self.call("execute", language=language, code=code, **arguments)


@contextmanager
def _client(transport: Callable[[], AbstractAsyncContextManager[Any]]) -> Iterator[Client]:
    @asynccontextmanager
    async def opened() -> AsyncIterator[ClientSession]:
        async with transport() as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            yield session

    with start_blocking_portal() as portal, portal.wrap_async_context_manager(opened()) as session:
        yield Client(portal, session)


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LMC_TOKEN", "LMC_REMOTE_TOKEN")}
    env.update(extra)
    return env


@contextmanager
def stdio_client_of(*args: str, env: dict[str, str] | None = None) -> Iterator[Client]:
    """A client of a new ``lmc mcp`` (with ``args``) over stdio; it ends with the client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lmc_runtime", "mcp", *args],
        env=env or server_env(),
        cwd=str(REPO),
    )
    with _client(lambda: stdio_client(params)) as client:
        yield client


@contextmanager
def http_client_of(url: str, token: str | None = TOKEN) -> Iterator[Client]:
    """A client of the ``lmc mcp --http`` at ``url``, with its own MCP session."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    @asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                yield streams

    with _client(transport) as client:
        yield client


class HttpServer:
    """A running ``lmc mcp --http`` on a free loopback port."""

    def __init__(self, process: subprocess.Popen[str], url: str) -> None:
        self.process = process
        self.url = url


@contextmanager
def http_server(*args: str, token: str = TOKEN) -> Iterator[HttpServer]:
    """Start ``lmc mcp --http --port 0`` and wait (bounded) until it says where it listens."""
    argv = [sys.executable, "-m", "lmc_runtime", "mcp", "--http", "--port", "0", *args]
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
        env=server_env(LMC_TOKEN=token),
        start_new_session=True,  # its session ends with this process (tie)
    )
    tie(process)
    try:
        url = _wait_for_line(process, "lmc mcp: listening on ").split()[-1]
        yield HttpServer(process, url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def _wait_for_line(process: subprocess.Popen[str], prefix: str, bound: float = 60) -> str:
    """The first line of ``process``'s stdout starting with ``prefix``."""
    found: list[str] = []
    done = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(prefix):
                found.append(line.strip())
                break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(bound), f"no {prefix!r} line in {bound} s"
    assert found, f"the process ended (status {process.poll()}) without a {prefix!r} line"
    return found[0]


def wait_until(condition: Callable[[], bool], bound: float, what: str) -> None:
    """Wait until ``condition()`` holds, at most ``bound`` seconds."""
    deadline = time.monotonic() + bound
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {bound} s"
        time.sleep(0.05)


def process_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie has)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
