"""The MCP server: its tools on the SDK's low-level ``Server``, over stdio.

A tool call finds its session's workspace (opening it on first use), parses
its arguments and runs. While ``execute`` runs, every message it streams is
a progress notification (when the client asked for progress). A call the
client cancels (``notifications/cancelled``) is cancelled by the SDK, which
stops its code: the run is closed, and closing a run interrupts it. A client
that goes away stops its code the same way: over stdio the server ends with
its input; over HTTP the transport tells (:meth:`Caller.gone`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from .. import __version__
from .calls import call_tool
from .pool import Workspaces
from .results import error_result
from .stdio import Intake, diverted_stdin
from .tools import parse_arguments, tool_list
from .workspace import Opener

__all__ = ["Caller", "StdioCaller", "build_server", "serve_stdio"]

INSTRUCTIONS = (
    "A real computer for running code. Call execute with a language (python, shell, "
    "javascript, typescript, r, java, html; the languages tool says which run here) and "
    "the code: its output, errors and plots come back, and the interpreters keep their "
    "state between calls. interrupt stops running code; restart starts a language's "
    "interpreter afresh."
)

Context = ServerRequestContext[Any, Any]


class Caller(Protocol):
    """What the transport tells of a tool call."""

    def session(self, ctx: Context) -> str | None:
        """The MCP session the call belongs to (None: it has none)."""
        ...

    def gone(self, ctx: Context) -> anyio.Event | None:
        """Set when the call's client has gone away (None: the transport cannot tell)."""
        ...


class StdioCaller:
    """Over stdio the process has one client, and ends when it goes."""

    def session(self, ctx: Context) -> str | None:
        return "stdio"

    def gone(self, ctx: Context) -> anyio.Event | None:
        return None


async def _until_gone(
    call: Awaitable[types.CallToolResult], gone: anyio.Event | None
) -> types.CallToolResult:
    """``call``'s result; cancelled, which stops its code, once ``gone`` is set."""
    if gone is None:
        return await call
    result = error_result("the client went away: the call was stopped")
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            await gone.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        result = await call
        tg.cancel_scope.cancel()
    return result


def build_server(workspaces: Workspaces, caller: Caller) -> Server[Any]:
    """A low-level SDK server whose tools run in ``workspaces``."""
    has_files, has_outputs = workspaces.opener.has_files, workspaces.opener.has_outputs

    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list(has_files, has_outputs))

    async def call(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            args = parse_arguments(params.name, params.arguments, has_files, has_outputs)
        except ValueError as exc:
            return error_result(str(exc))
        key = caller.session(ctx)
        if key is None:
            return error_result(
                "this call has no MCP session: each session gets a computer of its own, "
                "so initialize one first"
            )
        try:
            slot = await workspaces.get(key)
        except Exception as exc:
            return error_result(f"the computer could not be opened: {exc}")

        async def progress(count: int, text: str) -> None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await ctx.session.report_progress(count, None, text)

        return await _until_gone(call_tool(params.name, slot, args, progress), caller.gone(ctx))

    return Server(
        "lmc-runtime",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
    )


async def serve_stdio(opener: Opener) -> None:
    """Serve one client over stdin and stdout until its input ends, then close
    its workspace and everything its code started. Every request is answered,
    also one that is not a valid message (see :mod:`.stdio`)."""
    from mcp.server.stdio import stdio_server

    workspaces = Workspaces(opener)
    server = build_server(workspaces, StdioCaller())
    with diverted_stdin() as stdin:
        intake = Intake(anyio.wrap_file(stdin))
        async with (
            workspaces.running(),
            stdio_server(stdin=intake.as_file()) as (read, write),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(intake.answer, write)
            await server.run(read, write, server.create_initialization_options())
            tg.cancel_scope.cancel()
