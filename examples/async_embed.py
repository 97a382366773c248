"""Embedding lmc-runtime in an async agent loop, with input() answered by a callback."""

from __future__ import annotations

import anyio

from lmc_runtime import Computer


async def answer(prompt: str) -> str:
    return "Ada"


async def main() -> None:
    async with Computer(on_input=answer) as computer:
        async for reply in computer.arun("python", "name = input('name? ')\nprint('hello', name)"):
            print(reply.type, reply.format, repr(reply.content))


if __name__ == "__main__":
    anyio.run(main)
