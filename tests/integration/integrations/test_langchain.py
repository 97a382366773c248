"""LmcTool: LangChain's ``execute`` tool on a real Computer and on a RemoteComputer
of a real ``lmc serve``, invoked directly (sync and async, one call or several at
once), streamed through callbacks, and driven by a tool-calling chat model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("langchain_core", reason="the [langchain] extra is not installed")

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from lmc_runtime import Message, UsageError
from lmc_runtime.adapters.langchain import from_langchain
from lmc_runtime.integrations._runs import ComputerLike
from lmc_runtime.integrations.langchain import EVENT, LmcTool
from lmc_runtime.remote import RemoteComputer

from ..lmc_cli import import_without
from ..service.server import TOKEN
from .frameworks import KINDS, install_line, new_computer

pytestmark = pytest.mark.integration


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=KINDS)
def computer(request: pytest.FixtureRequest) -> Iterator[ComputerLike]:
    """One computer of each kind for the module, opened sync: both invoke and
    ainvoke use it."""
    with new_computer(request.param, request) as c:
        yield c


@pytest.fixture(scope="module")
def tool(computer: ComputerLike) -> LmcTool:
    return LmcTool(computer=computer)


def call(code: str, language: str = "python", call_id: str = "call-1") -> dict[str, Any]:
    """A model's tool call of ``execute``."""
    args = {"language": language, "code": code}
    return {"name": "execute", "args": args, "id": call_id, "type": "tool_call"}


def final_status(artifact: list[dict[str, Any]]) -> Any:
    last = artifact[-1]
    assert last["format"] == "active_line" and last["content"] is None, last
    return last["extras"]["status"]


def test_invoke_with_arguments_gives_the_output_as_text_blocks(tool: LmcTool) -> None:
    assert tool.invoke({"language": "python", "code": "print(6 * 7)"}) == [
        {"type": "text", "text": "42\n"}
    ]


def test_invoke_with_a_tool_call_gives_a_tool_message_with_the_lmc_messages(
    tool: LmcTool,
) -> None:
    reply = tool.invoke(call("kept = 'state'\nprint(kept)", call_id="c-ok"))
    assert isinstance(reply, ToolMessage)
    assert (reply.status, reply.tool_call_id, reply.name) == ("success", "c-ok", "execute")
    assert reply.content == [{"type": "text", "text": "state\n"}]
    assert final_status(reply.artifact) == "ok"
    assert [m["role"] for m in reply.artifact] == ["computer"] * len(reply.artifact)
    # The state stays for the next call.
    assert tool.invoke({"language": "python", "code": "print(kept)"}) == [
        {"type": "text", "text": "state\n"}
    ]


def test_a_plot_comes_back_as_a_standard_image_block(tool: LmcTool) -> None:
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
    reply = tool.invoke(call(code))
    images = [b for b in reply.content if isinstance(b, dict) and b["type"] == "image"]
    assert len(images) == 1
    assert images[0]["mime_type"] == "image/png"
    assert images[0]["base64"] == next(m for m in reply.artifact if m["type"] == "image")["content"]
    assert images[0]["base64"].startswith("iVBOR")  # a PNG's signature, in base64


def test_an_error_answers_with_status_error_and_keeps_the_artifact(tool: LmcTool) -> None:
    reply = tool.invoke(call("print('before')\n1 / 0", call_id="c-err"))
    assert isinstance(reply, ToolMessage)
    assert (reply.status, reply.tool_call_id) == ("error", "c-err")
    text = "".join(b["text"] for b in reply.content if isinstance(b, dict) and b["type"] == "text")
    assert text.startswith("before\n")
    assert "ZeroDivisionError" in text and "[error, exit code 1]" in text
    assert final_status(reply.artifact) == "error"


def test_a_shell_exit_code_is_in_the_content(tool: LmcTool) -> None:
    reply = tool.invoke(call("echo out; ls /no/such/path >/dev/null 2>&1", language="shell"))
    assert reply.status == "error"
    assert reply.content[-1] == {"type": "text", "text": "[error, exit code 2]"}


@pytest.mark.anyio
async def test_ainvoke_streams_every_lmc_message_as_a_custom_event(tool: LmcTool) -> None:
    events = [
        event
        async for event in tool.astream_events(
            call("for i in range(3): print(i, flush=True)"), version="v2"
        )
    ]
    streamed: list[dict[str, Any]] = [
        dict(e["data"]) for e in events if e["event"] == "on_custom_event"
    ]
    assert {e["name"] for e in events if e["event"] == "on_custom_event"} == {EVENT}
    end = next(e for e in events if e["event"] == "on_tool_end")["data"]["output"]
    assert isinstance(end, ToolMessage) and end.status == "success"
    assert streamed == end.artifact
    assert "".join(m["content"] for m in streamed if m["format"] == "output") == "0\n1\n2\n"


class _Seen(AsyncCallbackHandler):
    """Sets ``event`` once a streamed LMC message's output contains ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.event = anyio.Event()

    async def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == EVENT and self.text in str(data.get("content")):
            self.event.set()


@pytest.mark.anyio
async def test_cancelling_ainvoke_stops_the_code_and_keeps_the_state(tool: LmcTool) -> None:
    seen = _Seen("started")
    code = "survivor = 5\nprint('started', flush=True)\nimport time\ntime.sleep(600)"
    with anyio.fail_after(60):  # a bound on a hang, not a timing
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: tool.ainvoke(call(code), {"callbacks": [seen]}))
            await seen.event.wait()
            tg.cancel_scope.cancel()
        reply = await tool.ainvoke(call("print(survivor)"))
    assert (reply.status, reply.content) == ("success", [{"type": "text", "text": "5\n"}])


@pytest.fixture(params=KINDS)
async def open_computer(request: pytest.FixtureRequest) -> AsyncIterator[ComputerLike]:
    """A computer opened with ``async with`` in the test's event loop."""
    async with new_computer(request.param, request) as c:
        yield c


@pytest.mark.anyio
async def test_ainvoke_runs_on_a_computer_opened_in_the_event_loop(
    open_computer: ComputerLike,
) -> None:
    tool = LmcTool(computer=open_computer)
    reply = await tool.ainvoke(call("print('in the loop')"))
    assert reply.content == [{"type": "text", "text": "in the loop\n"}]
    with pytest.raises(UsageError, match="use arun"):  # sync invoke cannot reach its loop
        tool.invoke(call("print(1)"))


@pytest.mark.anyio
async def test_calls_made_at_once_run_one_after_another(tool: LmcTool) -> None:
    """Regression: a second call while one ran failed on a RemoteComputer (its
    session refuses a second run), as a graph running a model's tool calls in
    parallel makes them; now it waits for the first to end. A waiting call that is
    cancelled leaves the queue and never runs."""
    seen = _Seen("first")
    first = "print('first', flush=True)\nimport time\ntime.sleep(600)"
    replies: dict[str, Any] = {}

    async def invoke(tool_call: dict[str, Any], config: Any = None) -> None:
        replies[tool_call["id"]] = await tool.ainvoke(tool_call, config)

    with anyio.fail_after(60):  # a bound on a hang, not a timing
        async with anyio.create_task_group() as tg:
            tg.start_soon(invoke, call(first, call_id="first"), {"callbacks": [seen]})
            await seen.event.wait()
            tg.start_soon(invoke, call("print('second')", call_id="second"))
            async with anyio.create_task_group() as cancelled:
                cancelled.start_soon(invoke, call("ran = 'never'", call_id="never"))
                await anyio.wait_all_tasks_blocked()  # the calls after the first wait
                cancelled.cancel_scope.cancel()
            await anyio.to_thread.run_sync(tool.computer.interrupt, None)
        after = await tool.ainvoke(call("print('ran' in dir())"))
    assert replies["first"].status == "error" and "KeyboardInterrupt" in str(replies["first"])
    assert replies["second"].content == [{"type": "text", "text": "second\n"}]
    assert "never" not in replies and after.content == [{"type": "text", "text": "False\n"}]


def test_a_batch_of_calls_runs_them_all(tool: LmcTool) -> None:
    """``batch`` invokes the calls in threads at once; each gets its own reply."""
    calls = [call(f"print({i} * 2)", call_id=f"b{i}") for i in range(4)]
    replies = tool.batch(calls)
    assert [(r.tool_call_id, r.status, r.content) for r in replies] == [
        (f"b{i}", "success", [{"type": "text", "text": f"{i * 2}\n"}]) for i in range(4)
    ]


def test_the_description_lists_the_languages_that_run(
    computer: ComputerLike, tool: LmcTool
) -> None:
    """Each available language with its aliases (for a remote computer, those of
    its session), and no other."""
    for status in computer.languages.values():
        entry = status.name + (f" ({', '.join(status.aliases)})" if status.aliases else "")
        listed = f" {entry}," in tool.description or f" {entry}." in tool.description
        assert listed == status.available, (entry, tool.description)


def test_a_remote_computer_not_open_yet_gets_a_description_without_languages() -> None:
    """Regression: a RemoteComputer learns its session's languages when it opens;
    before, the tool told the model it had none."""
    unopened = RemoteComputer("http://127.0.0.1:9", token=TOKEN)  # never reached
    description = LmcTool(computer=unopened).description
    assert "Languages" not in description and description.endswith("between calls.")


class _ToolCallingModel(GenericFakeChatModel):
    """A scripted chat model that records the tools bound to it."""

    bound: list[dict[str, Any]] = []

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        self.bound = [convert_to_openai_tool(t) for t in tools]
        return self


def _tool_loop(model: _ToolCallingModel, tool: LmcTool, question: str) -> list[BaseMessage]:
    """The usual loop: ask, run every tool call, answer the model until it stops calling."""
    chat = model.bind_tools([tool])
    history: list[BaseMessage] = [HumanMessage(question)]
    while True:
        answer = chat.invoke(history)
        history.append(answer)
        if not answer.tool_calls:
            return history
        history += [tool.invoke(tool_call) for tool_call in answer.tool_calls]


def test_a_tool_calling_loop_with_a_fake_chat_model(tool: LmcTool) -> None:
    script = iter(
        [
            AIMessage("", tool_calls=[call("print(2 ** 10)", call_id="a")]),
            AIMessage("", tool_calls=[call("echo $((6 * 7))", language="bash", call_id="b")]),
            AIMessage("2**10 is 1024 and 6*7 is 42."),
        ]
    )
    model = _ToolCallingModel(messages=script)
    history = _tool_loop(model, tool, "Compute 2**10 and 6*7.")
    schema = model.bound[0]["function"]
    assert schema["name"] == "execute"
    assert set(schema["parameters"]["required"]) == {"language", "code"}
    replies = [m for m in history if isinstance(m, ToolMessage)]
    assert [(r.tool_call_id, r.status, r.content) for r in replies] == [
        ("a", "success", [{"type": "text", "text": "1024\n"}]),
        ("b", "success", [{"type": "text", "text": "42\n"}]),
    ]
    # The converters read the conversation back as LMC messages.
    lmc: list[Message] = from_langchain(history)
    codes = [(m.id, m.format, m.content) for m in lmc if m.type == "code"]
    assert codes == [("a", "python", "print(2 ** 10)"), ("b", "bash", "echo $((6 * 7))")]
    outputs = [(m.in_reply_to, m.content) for m in lmc if m.role == "computer"]
    assert outputs == [("a", "1024\n"), ("b", "42\n")]


def test_without_langchain_core_the_import_says_what_to_install(tmp_path: Path) -> None:
    said = import_without(tmp_path, "langchain_core", "lmc_runtime.integrations.langchain")
    assert said == install_line("langchain", "langchain")
