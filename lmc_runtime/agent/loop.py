"""The agent loop: a model, the ``execute`` tool, and a real Computer (in-process,
or a :class:`~lmc_runtime.remote.RemoteComputer`: any
:class:`~lmc_runtime.ComputerLike`).

Each step sends the conversation (as Chat Completions messages) to the model.
Tool calls to ``execute`` run on the :class:`~lmc_runtime.Computer`; their
messages stream out of :meth:`Agent.arun` as they come and go back to the model
on the next step: output and errors in the tool message, images as
``image_url`` parts of a following user message. The loop ends when the model
answers without a tool call, or after ``max_steps`` model turns.

A call the runtime cannot process (another tool, arguments that are not JSON
with ``language`` and ``code``) is answered with a "not understood" reply that
references it, so the model can correct itself.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from .. import replies
from ..adapters.openai import EXECUTE, execute_tool, from_openai, to_openai
from ..computer_like import ComputerLike
from ..messages import Message, new_id
from .client import ChatClient, TextCallback

__all__ = ["SYSTEM_PROMPT", "Agent"]


SYSTEM_PROMPT = (
    "You are a helpful assistant with a computer. To run code, call the `execute` tool "
    "with a language and the code; you will get back its output, errors and images. "
    "State persists between calls. When you are done, answer in plain text."
)


@dataclass(eq=False, repr=False)
class Agent:
    """Drives ``computer`` with the model behind ``client``.

    ``history`` holds the whole conversation as LMC messages (every message
    gets ``conversation_id`` when one is given), ready for a thread store.
    """

    computer: ComputerLike
    client: ChatClient
    _: KW_ONLY
    system_prompt: str | None = SYSTEM_PROMPT
    max_steps: int = 20
    conversation_id: str | None = None
    timeout: float | None = None
    on_text: TextCallback | None = None
    history: list[Message] = field(default_factory=list, init=False)

    def _languages(self) -> list[str]:
        return sorted(name for name, status in self.computer.languages.items() if status.available)

    def _keep(self, message: Message) -> Message:
        update: dict[str, Any] = {}
        if message.id is None:
            update["id"] = new_id()
        if message.created_at is None:
            update["created_at"] = time.time()
        if self.conversation_id is not None:
            update["conversation_id"] = self.conversation_id
        kept = message.model_copy(update=update) if update else message
        self.history.append(kept)
        return kept

    def _request(self) -> list[dict[str, Any]]:
        head = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return head + to_openai(self.history, metadata=False)

    async def arun(self, prompt: str | Message) -> AsyncIterator[Message]:
        """Send ``prompt``; yield every message of the exchange as it happens."""
        if isinstance(prompt, str):
            prompt = Message(role="user", type="message", content=prompt)
        yield self._keep(prompt)
        tools = [execute_tool(self._languages())]
        for _ in range(self.max_steps):
            reply = await self.client.complete(self._request(), tools, on_text=self.on_text)
            said = from_openai([reply])
            calls = [m for m in said if _is_call(m)]
            for message in said:
                if not _is_call(message):
                    yield self._keep(message)
            if not calls:
                return
            for call in calls:  # each call is followed by its own output
                kept = self._keep(call)
                yield kept
                async for out in self._answer(kept):
                    yield self._keep(out)
        yield self._keep(
            replies.notice(
                f"Stopped after {self.max_steps} model turns without a final answer.",
                replies.Status.ABORTED,
                self.history[-1].id if self.history else None,
            )
        )

    async def _answer(self, call: Message) -> AsyncIterator[Message]:
        if call.type == "code":
            async for out in self.computer.arun(call, timeout=self.timeout):
                yield out
            return
        tool_call = (call.extras or {}).get("openai_tool_call") or {}
        function = tool_call.get("function") or {}
        name = function.get("name")
        if name != EXECUTE:
            reason = f"there is no tool {name!r}; call `{EXECUTE}` with a language and the code"
        else:
            reason = (
                f"the arguments of `{EXECUTE}` must be a JSON object with string fields "
                f"'language' and 'code', got {str(function.get('arguments'))[:200]!r}"
            )
        yield replies.not_understood(reason, tool_call.get("id") or call.id)


def _is_call(message: Message) -> bool:
    return message.role == "assistant" and (
        message.type == "code" or "openai_tool_call" in (message.extras or {})
    )
