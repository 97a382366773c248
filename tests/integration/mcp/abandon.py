"""A client that starts an execution and is then killed: ``python -m
tests.integration.mcp.abandon (stdio | URL) LANGUAGE CODE``.

It prints ``running`` once the first progress notification of the run
arrives, then waits for the run's end, which the test never lets it see.
"""

from __future__ import annotations

import sys

import anyio
from mcp import ClientSession

from .client import TOKEN, server_env


async def main(where: str, language: str, code: str) -> None:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        print("running", flush=True)

    async def run(session: ClientSession) -> None:
        await session.initialize()
        await session.call_tool(
            "execute", {"language": language, "code": code}, progress_callback=progress
        )
        print("finished", flush=True)

    if where == "stdio":
        from mcp import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=sys.executable, args=["-m", "lmc_runtime", "mcp"], env=server_env()
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await run(session)
    else:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            streamable_http_client(where, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await run(session)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
