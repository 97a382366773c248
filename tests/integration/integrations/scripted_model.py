"""A smolagents model that answers with canned code actions: import it only
once smolagents is known to be installed (``pytest.importorskip``)."""

from __future__ import annotations

from typing import Any

from smolagents.models import ChatMessage, MessageRole, Model  # type: ignore[import-untyped]


class Scripted(Model):  # type: ignore[misc]
    """A model that answers with canned code actions, in order, and keeps what it was sent."""

    def __init__(self, *actions: str) -> None:
        super().__init__(model_id="scripted")
        self.actions = list(actions)
        self.prompts: list[str] = []

    def generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatMessage:
        self.prompts.append(str(messages))
        return ChatMessage(role=MessageRole.ASSISTANT, content=self.actions.pop(0))
