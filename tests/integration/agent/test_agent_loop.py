"""The agent loop against a scripted OpenAI-compatible server on loopback: real
HTTP, real tool calls, a real Python kernel. The server records what it
received, so the tests check that output, errors and images went back to the
model."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from lmc_runtime import Computer, Message, Timeouts
from lmc_runtime.adapters.openai import from_openai, to_openai
from lmc_runtime.agent import Agent, ChatClient, ChatConfig, ChatError

from .conftest import ServerFactory

pytestmark = pytest.mark.integration

IMAGE_CODE = (
    "from PIL import Image\nfrom IPython.display import display\n"
    "display(Image.new('RGB', (4, 4), 'red'))"
)


def call(call_id: str, language: str, code: str, name: str = "execute") -> dict[str, Any]:
    arguments = json.dumps({"language": language, "code": code})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


SCRIPT: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "content": "Let me compute that.",
        "tool_calls": [call("call_a", "python", "x = 6 * 7\nprint(x)")],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_b", "python", IMAGE_CODE), call("call_c", "python", "x / 0")],
    },
    {"role": "assistant", "content": None, "tool_calls": [call("call_d", "python", "", "browse")]},
    {"role": "assistant", "content": "The answer is 42, and the square is red."},
]


def by_role(request: dict[str, Any], role: str) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == role]


def tool_reply(request: dict[str, Any], call_id: str) -> str:
    (message,) = [m for m in by_role(request, "tool") if m["tool_call_id"] == call_id]
    return str(message["content"])


async def drive(base_url: str, *, stream: bool) -> tuple[Agent, list[Message], list[str]]:
    pieces: list[str] = []
    config = ChatConfig(base_url=base_url, model="scripted-model", api_key="sk-test")
    with anyio.fail_after(90):
        async with (
            Computer(timeouts=Timeouts(execution=30)) as computer,
            ChatClient(config, stream=stream) as client,
        ):
            agent = Agent(computer, client, conversation_id="thread-1", on_text=pieces.append)
            seen = [message async for message in agent.arun("What is 6 times 7? Draw a square.")]
    return agent, seen, pieces


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_agent_feeds_output_errors_and_images_back_until_plain_text(
    scripted_server: ServerFactory, stream: bool
) -> None:
    server = scripted_server(SCRIPT)
    agent, seen, pieces = anyio.run(lambda: drive(server.base_url, stream=stream))

    # Four model turns, each sent with the execute tool, the model name and the key.
    assert len(server.requests) == 4
    for request, headers in zip(server.requests, server.headers_seen, strict=True):
        assert request["model"] == "scripted-model"
        assert [t["function"]["name"] for t in request["tools"]] == ["execute"]
        assert (
            "python"
            in request["tools"][0]["function"]["parameters"]["properties"]["language"]["enum"]
        )
        assert headers["Authorization"] == "Bearer sk-test"
        assert bool(request.get("stream")) is stream
        assert all("lmc" not in m for m in request["messages"])
    first, second, third, fourth = server.requests
    assert first["messages"][0]["role"] == "system"
    assert by_role(first, "user")[-1]["content"] == "What is 6 times 7? Draw a square."

    # The output of call_a went back in its tool message.
    assert tool_reply(second, "call_a").strip() == "42"
    (assistant,) = [m for m in by_role(second, "assistant") if m.get("tool_calls")]
    assert assistant["content"] == "Let me compute that."
    # The image went back as a data-URL part on a user message right after call_b's tool message.
    messages = third["messages"]
    at = next(i for i, m in enumerate(messages) if m.get("tool_call_id") == "call_b")
    follow = messages[at + 1]
    assert follow["role"] == "user"
    urls = [p["image_url"]["url"] for p in follow["content"] if p["type"] == "image_url"]
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,iVBOR")
    # The error went back too, and the state survived between calls (x / 0, not a NameError).
    assert "ZeroDivisionError" in tool_reply(third, "call_c")
    assert "NameError" not in tool_reply(third, "call_c")
    # A call to a tool that does not exist gets a not-understood reply referencing it.
    assert "not understood" in tool_reply(fourth, "call_d")
    assert "browse" in tool_reply(fourth, "call_d")

    # What the loop streamed: the prompt, the model's words, each call followed by its output.
    assert seen == agent.history
    assert seen[0].role == "user" and seen[-1].content == "The answer is 42, and the square is red."
    assert all(m.conversation_id == "thread-1" and m.id for m in seen)
    codes = [m for m in seen if m.type == "code" and m.role == "assistant"]
    assert [m.id for m in codes] == ["call_a", "call_b", "call_c"]
    for code in codes:
        replies_ = [m for m in seen if m.in_reply_to == code.id]
        assert seen[seen.index(code) + 1] is replies_[0]
        assert seen[seen.index(code) + len(replies_)] is replies_[-1]  # contiguous
        assert replies_[-1].format == "active_line" and replies_[-1].content is None
    images = [m for m in seen if m.type == "image"]
    assert len(images) == 1 and images[0].in_reply_to == "call_b"
    not_understood = [m for m in seen if (m.extras or {}).get("status") == "not_understood"]
    assert len(not_understood) == 1 and not_understood[0].in_reply_to == "call_d"
    if stream:
        assert "".join(pieces) == "Let me compute that.The answer is 42, and the square is red."
        assert len(pieces) > 2  # it really came in pieces

    # The history converts losslessly.
    assert from_openai(to_openai(agent.history)) == agent.history


def test_chat_error_when_the_endpoint_fails(scripted_server: ServerFactory) -> None:
    server = scripted_server([])  # no replies: every request gets HTTP 500

    async def ask() -> None:
        config = ChatConfig(base_url=server.base_url, model="m")
        async with ChatClient(config) as client:
            await client.complete([{"role": "user", "content": "hi"}])

    with pytest.raises(ChatError, match="HTTP 500"):
        anyio.run(ask)


def test_config_reads_the_environment_and_flags_win() -> None:
    env = {"LMC_BASE_URL": "http://h:1/v1", "OPENAI_MODEL": "m1", "OPENAI_API_KEY": "k"}
    assert ChatConfig.from_env(env) == ChatConfig("http://h:1/v1", "m1", "k")
    assert ChatConfig.from_env(env, model="m2", api_key=None).model == "m2"
    with pytest.raises(ChatError, match="no model"):
        ChatClient(ChatConfig.from_env({}))
