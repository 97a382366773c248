"""A client of ``lmc mcp`` over stdio that starts an execution and is then
killed: ``python -m tests.integration.mcp.abandon LANGUAGE CODE``.

It prints ``running`` once the first progress notification of the run
arrives, then waits for the run's end, which the test never lets it see.
"""

from __future__ import annotations

import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from .client import server_env


async def main(language: str, code: str) -> None:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        print("running", flush=True)

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lmc_runtime", "mcp"], env=server_env()
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool(
            "execute", {"language": language, "code": code}, progress_callback=progress
        )
        print("finished", flush=True)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:3])
