"""The Agent drives a RemoteComputer as it drives a Computer: a scripted model's
tool calls run in a session of a real lmc serve, and their output goes back."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from lmc_runtime import Message
from lmc_runtime.agent import Agent, ChatClient, ChatConfig
from lmc_runtime.remote import RemoteComputer

from ..agent.scripted import ScriptedServer
from ..service.server import TOKEN, Server


def call(call_id: str, code: str) -> dict[str, Any]:
    arguments = json.dumps({"language": "python", "code": code})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "execute", "arguments": arguments},
    }


SCRIPT: list[dict[str, Any]] = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_a", "x = 6 * 7\nprint(x)")]},
    {"role": "assistant", "content": None, "tool_calls": [call("call_b", "print(x + 1)")]},
    {"role": "assistant", "content": "42, and then 43."},
]


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    server = ScriptedServer(SCRIPT)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=30)


def tool_reply(request: dict[str, Any], call_id: str) -> str:
    (message,) = [m for m in request["messages"] if m.get("tool_call_id") == call_id]
    return str(message["content"])


async def drive(server: Server, model: ScriptedServer) -> list[Message]:
    config = ChatConfig(base_url=model.base_url, model="scripted-model", api_key="sk-test")
    with anyio.fail_after(90):
        async with (
            RemoteComputer(server.url, token=TOKEN, languages=["python"]) as computer,
            ChatClient(config) as client,
        ):
            agent = Agent(computer, client)
            return [message async for message in agent.arun("What is 6 times 7?")]


def test_the_agent_runs_its_calls_in_a_remote_session(
    server: Server, model: ScriptedServer
) -> None:
    seen = anyio.run(drive, server, model)
    assert len(model.requests) == 3
    # Only the session's language is offered to the model.
    enum = model.requests[0]["tools"][0]["function"]["parameters"]["properties"]["language"]
    assert enum["enum"] == ["python"]
    assert tool_reply(model.requests[1], "call_a").strip() == "42"
    assert tool_reply(model.requests[2], "call_b").strip() == "43"  # the state was kept
    assert seen[-1].role == "assistant" and seen[-1].content == "42, and then 43."
