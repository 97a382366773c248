"""LangChain: :class:`LmcTool`, a tool that runs code on a computer.

The tool is named ``execute`` and takes ``language`` and ``code``, so its calls
are what :func:`lmc_runtime.adapters.langchain.from_langchain` reads back as LMC
code messages. It answers with ``response_format="content_and_artifact"``: the
content is standard content blocks (the output as text, plots as base64 image
blocks) and the artifact is the run's LMC messages as dicts. Called with a
model's tool call, a run that does not end ``ok`` gives a ``ToolMessage`` with
``status="error"``, artifact included.
Every LMC message is also dispatched as it arrives, as the custom callback event
``lmc_message`` (``astream_events`` shows it as ``on_custom_event``). Calls
made at once (``batch``, ``abatch``, a graph's parallel tool calls) run one
after another, as a remote session needs::

    from lmc_runtime import Computer
    from lmc_runtime.integrations.langchain import LmcTool

    tool = LmcTool(computer=Computer())
    model = chat_model.bind_tools([tool])

Needs the ``[langchain]`` extra (langchain-core).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from ..adapters.langchain import EXECUTE, to_langchain
from ..errors import MissingExtra
from ..messages import Message
from ._runs import AsyncRunner, ComputerLike, Outcome, RunLock, collect, describe_languages

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForToolRun,
        CallbackManagerForToolRun,
        adispatch_custom_event,
        dispatch_custom_event,
    )
    from langchain_core.messages import ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool
    from pydantic import BaseModel, Field, PrivateAttr, SkipValidation, model_validator
except ModuleNotFoundError as exc:
    raise MissingExtra("lmc_runtime.integrations.langchain", "langchain", missing=exc.name) from exc

__all__ = ["EVENT", "ExecuteInput", "LmcTool", "content_blocks"]

#: The name of the custom callback event each LMC message is dispatched as.
EVENT = "lmc_message"

_DESCRIPTION = (
    "Run code on a computer and see what it printed, its errors and its plots. "
    "Each language keeps its state (variables, imports, working directory) "
    "between calls."
)

ToolResult = tuple[list[dict[str, Any]] | ToolMessage, list[dict[str, Any]]]


class ExecuteInput(BaseModel):
    """The arguments of the ``execute`` tool."""

    language: str = Field(description="the language of the code, e.g. python or shell")
    code: str = Field(description="the code to run")


def content_blocks(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Standard content blocks for a run's messages: console output as text
    (consecutive output in one block), base64 images as image blocks."""
    blocks: list[dict[str, Any]] = []
    for message in messages:
        if message.type == "console" and message.format == "output":
            if blocks and blocks[-1]["type"] == "text":
                blocks[-1]["text"] += message.content
            else:
                blocks.append({"type": "text", "text": message.content})
        elif message.type == "image" and message.format != "path":
            image = to_langchain([message])[0]["content"][0]
            blocks.append(
                {k: image[k] for k in ("type", "base64", "mime_type", "id") if k in image}
            )
    return blocks


def _content(outcome: Outcome) -> list[dict[str, Any]]:
    blocks = content_blocks(outcome.messages)
    if not outcome.ok:
        blocks.append(
            {"type": "text", "text": f"[{outcome.status}, exit code {outcome.exit_code}]"}
        )
    return blocks or [{"type": "text", "text": "(no output)"}]


class LmcTool(BaseTool):
    """The ``execute`` tool: runs ``code`` in ``language`` on ``computer`` (a
    :class:`~lmc_runtime.Computer` or a :class:`~lmc_runtime.remote.RemoteComputer`).

    ``timeout`` bounds each run, in seconds (None: the computer's own). Sync
    ``invoke`` needs a computer that is not open in async code; ``ainvoke`` takes
    either kind. The description lists the computer's languages, which a
    RemoteComputer knows once it is open: open it before making the tool.
    """

    name: str = EXECUTE
    description: str = ""
    args_schema: type[BaseModel] = ExecuteInput
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    computer: SkipValidation[ComputerLike]
    timeout: float | None = None
    _lock: RunLock = PrivateAttr(default_factory=RunLock)

    @model_validator(mode="after")
    def _describe(self) -> LmcTool:
        if not self.description:
            languages = describe_languages(self.computer)
            listed = f" Languages: {languages}." if languages else ""
            self.description = _DESCRIPTION + listed
        return self

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        # The call id lets a failed run answer with a ToolMessage of status "error"
        # that keeps its artifact (a ToolException would drop it).
        args, kwargs = super()._to_args_and_kwargs(tool_input, tool_call_id)
        return args, {**kwargs, "tool_call_id": tool_call_id}

    def _result(self, outcome: Outcome, tool_call_id: str | None) -> ToolResult:
        artifact = [m.to_dict() for m in outcome.messages]
        content = _content(outcome)
        if outcome.ok or tool_call_id is None:
            return content, artifact
        blocks: list[str | dict[Any, Any]] = [*content]
        message = ToolMessage(
            content=blocks,
            artifact=artifact,
            tool_call_id=tool_call_id,
            name=self.name,
            status="error",
        )
        return message, artifact

    def _run(
        self,
        language: str,
        code: str,
        tool_call_id: str | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> ToolResult:
        def on_message(message: Message) -> None:
            if run_manager is not None:
                config = RunnableConfig(callbacks=run_manager.get_child())
                dispatch_custom_event(EVENT, message.to_dict(), config=config)

        outcome = collect(
            self.computer,
            language,
            code,
            timeout=self.timeout,
            on_message=on_message,
            lock=self._lock,
        )
        return self._result(outcome, tool_call_id)

    async def _arun(
        self,
        language: str,
        code: str,
        tool_call_id: str | None = None,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
    ) -> ToolResult:
        async def on_message(message: Message) -> None:
            if run_manager is not None:
                config = RunnableConfig(callbacks=run_manager.get_child())
                await adispatch_custom_event(EVENT, message.to_dict(), config=config)

        runner = AsyncRunner(self.computer, timeout=self.timeout, lock=self._lock)
        outcome = await runner.run(language, code, on_message=on_message)
        return self._result(outcome, tool_call_id)
