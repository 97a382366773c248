"""An agent loop against any OpenAI-compatible chat endpoint (Jan's local server,
Ollama, llama.cpp, vLLM): the model runs code through the `execute` tool, sees the
output and images, and goes on until it answers in plain text.

    python examples/agent_loop.py --base-url http://localhost:11434/v1 --model qwen2.5 \\
        "What is the 20th Fibonacci number? Compute it."

--base-url, --model and --api-key default to LMC_BASE_URL, LMC_MODEL and LMC_API_KEY
(or OPENAI_BASE_URL, OPENAI_MODEL and OPENAI_API_KEY). --thread-dir keeps the
conversation in a Jan-compatible thread folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from lmc_runtime import Computer, Message, Timeouts
from lmc_runtime.agent import Agent, ChatClient, ChatConfig, ChatError
from lmc_runtime.store import JanThreadStore


def show(message: Message) -> None:
    """One line or block per message, as it arrives."""
    if message.type == "code" and message.role == "assistant":
        print(f"```{message.format}\n{message.content}\n```", flush=True)
    elif message.format == "output":
        print(message.content, end="" if message.content.endswith("\n") else "\n", flush=True)
    elif message.type == "image":
        print(f"[image {message.format}, {len(message.content)} base64 characters]", flush=True)
    elif message.type == "message":
        print(f"{message.role}: {message.content}", flush=True)


async def main(args: argparse.Namespace) -> int:
    config = ChatConfig.from_env(base_url=args.base_url, model=args.model, api_key=args.api_key)
    store = JanThreadStore(args.thread_dir) if args.thread_dir else None
    thread = store.create(title=args.prompt[:60]) if store else None
    try:
        async with (
            Computer(timeouts=Timeouts(execution=args.timeout)) as computer,
            ChatClient(config, stream=args.stream) as client,
        ):
            agent = Agent(computer, client, conversation_id=thread.id if thread else None)
            async for message in agent.arun(args.prompt):
                show(message)
            if store and thread:
                await anyio.to_thread.run_sync(store.append, thread.id, agent.history)
                print(f"[thread {thread.id} saved in {args.thread_dir}]")
    except ChatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompt", help="what to ask the model")
    parser.add_argument("--base-url", help="the endpoint, e.g. http://localhost:1337/v1")
    parser.add_argument("--model", help="the model name the endpoint knows")
    parser.add_argument("--api-key", help="sent as a Bearer token, if the endpoint needs one")
    parser.add_argument("--stream", action="store_true", help="ask for a streamed answer")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per code run")
    parser.add_argument("--thread-dir", type=Path, help="save the conversation here")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(anyio.run(main, parse_args()))
