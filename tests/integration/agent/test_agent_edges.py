"""The agent loop and its client against a model that misbehaves: tools that do
not exist, arguments that are not JSON, no end of tool calls, refusals, rate
limits, and streams cut anywhere or carrying an error."""

from __future__ import annotations

import functools
import json
from typing import Any

import anyio
import pytest

from lmc_runtime import Computer, Message, Timeouts
from lmc_runtime.agent import Agent, ChatClient, ChatConfig, ChatError

from .conftest import ServerFactory
from .test_agent_loop import call

pytestmark = pytest.mark.integration


async def run_agent(base_url: str, prompt: str, **options: Any) -> tuple[Agent, list[Message]]:
    config = ChatConfig(base_url=base_url, model="scripted-model")
    with anyio.fail_after(90):
        async with (
            Computer(timeouts=Timeouts(execution=30)) as computer,
            ChatClient(config) as client,
        ):
            agent = Agent(computer, client, **options)
            seen = [message async for message in agent.arun(prompt)]
    return agent, seen


def complete(base_url: str, *, stream: bool, retries: int = 2) -> dict[str, Any]:
    async def ask() -> dict[str, Any]:
        config = ChatConfig(base_url=base_url, model="m", retries=retries)
        with anyio.fail_after(60):
            async with ChatClient(config, stream=stream) as client:
                return await client.complete([{"role": "user", "content": "hi"}])

    return anyio.run(ask)


def test_unknown_tools_and_bad_arguments_are_answered_so_the_model_can_retry(
    scripted_server: ServerFactory,
) -> None:
    bad_json = {
        "id": "call_bad",
        "type": "function",
        "function": {"name": "execute", "arguments": '{"language": "python", "code": '},
    }
    server = scripted_server(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("call_web", "x", "", "browse")],
            },
            {"role": "assistant", "content": None, "tool_calls": [bad_json]},
            {"role": "assistant", "content": "Giving up politely."},
        ]
    )
    _, seen = anyio.run(run_agent, server.base_url, "go")
    answers = {m.in_reply_to: m for m in seen if m.role == "computer"}
    assert set(answers) == {"call_web", "call_bad"}
    assert all(str(m.content).startswith("[lmc] not understood:") for m in answers.values())
    assert "no tool 'browse'" in str(answers["call_web"].content)
    assert seen[-1].content == "Giving up politely."
    # The model saw each answer as the tool message of its own call.
    last = server.requests[-1]["messages"]
    tools = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
    assert set(tools) == {"call_web", "call_bad"}
    assert all("not understood" in text for text in tools.values())


def test_a_model_that_never_stops_calling_tools_is_stopped_after_max_steps(
    scripted_server: ServerFactory,
) -> None:
    server = scripted_server(
        [
            {"role": "assistant", "content": None, "tool_calls": [call(f"c{n}", "python", "1")]}
            for n in range(5)
        ]
    )
    _, seen = anyio.run(functools.partial(run_agent, max_steps=2), server.base_url, "loop forever")
    assert len(server.requests) == 2
    assert seen[-1].extras is not None and seen[-1].extras["status"] == "aborted"
    assert "after 2 model turns" in str(seen[-1].content)


def test_a_refusal_ends_the_loop_and_is_kept(scripted_server: ServerFactory) -> None:
    server = scripted_server([{"role": "assistant", "content": None, "refusal": "I won't."}])
    _, seen = anyio.run(run_agent, server.base_url, "do something bad")
    assert [(m.role, m.content) for m in seen] == [
        ("user", "do something bad"),
        ("assistant", "I won't."),
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_rate_limits_and_unavailable_servers_are_retried(
    scripted_server: ServerFactory, stream: bool
) -> None:
    server = scripted_server(
        [
            {"status": 429, "retry_after": "0"},
            {"status": 503, "retry_after": "0"},
            {"role": "assistant", "content": "fine now"},
        ]
    )
    assert complete(server.base_url, stream=stream)["content"] == "fine now"
    assert len(server.requests) == 3


def test_retries_run_out_with_a_chat_error(scripted_server: ServerFactory) -> None:
    server = scripted_server([{"status": 429, "retry_after": "0"}] * 3)
    with pytest.raises(ChatError, match="HTTP 429"):
        complete(server.base_url, stream=False, retries=1)
    assert len(server.requests) == 2


def test_sse_events_cut_anywhere_still_make_the_message(scripted_server: ServerFactory) -> None:
    reply = {
        "role": "assistant",
        "content": "Running it — naïve ünïcode 😀.",
        "tool_calls": [call("c1", "python", "print('a')"), call("c2", "shell", "echo b")],
    }
    server = scripted_server([reply], split=True)
    got = complete(server.base_url, stream=True)
    assert got["content"] == reply["content"]
    assert [(c["id"], json.loads(c["function"]["arguments"])) for c in got["tool_calls"]] == [
        ("c1", {"language": "python", "code": "print('a')"}),
        ("c2", {"language": "shell", "code": "echo b"}),
    ]


@pytest.mark.parametrize(
    ("events", "match"),
    [
        (['{"error": {"message": "model overloaded"}}'], "model overloaded"),
        (["[1, 2]"], "not a chat completion chunk"),
        (["{not json"], "unreadable"),
    ],
    ids=["error-event", "not-an-object", "not-json"],
)
def test_a_broken_stream_is_a_chat_error(
    scripted_server: ServerFactory, events: list[str], match: str
) -> None:
    server = scripted_server([{"events": events}])
    with pytest.raises(ChatError, match=match):
        complete(server.base_url, stream=True)
