"""Readiness probes of a kernel's conversation: answered, and stalled on one channel."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from lmc_runtime.backends.jupyter import conversation as conversation_module
from lmc_runtime.backends.jupyter.conversation import Conversation

pytestmark = pytest.mark.anyio

_LIMIT = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the kernel's sockets are asyncio's


async def _nothing(*_: Any) -> None:
    return None


def _conversation() -> Conversation:
    return Conversation(_nothing, lambda _value: None, _nothing, announces_input=False)


class _Kernel:
    """Answers each probe on the channels it is given, a moment after it is sent."""

    def __init__(self, conversation: Conversation, channels: tuple[str, ...]) -> None:
        self.conversation, self.channels = conversation, channels
        self.sent: list[str] = []
        self._ids = itertools.count()
        self.nudges = 0
        self.task_group: Any = None

    def send(self, msg_type: str, content: dict[str, Any], metadata: dict[str, Any]) -> str:
        msg_id = f"probe-{next(self._ids)}"
        self.sent.append(msg_id)
        for channel in self.channels:
            msg = {"parent_header": {"msg_id": msg_id}, "msg_type": "status"}
            self.task_group.start_soon(self.conversation.dispatch, channel, msg)
        return msg_id

    def nudge(self) -> None:
        self.nudges += 1


async def _probe(channels: tuple[str, ...], timeout: float) -> tuple[Conversation, _Kernel]:
    conversation = _conversation()
    kernel = _Kernel(conversation, channels)
    with anyio.fail_after(_LIMIT):
        async with anyio.create_task_group() as tg:
            kernel.task_group = tg
            await conversation.probe(kernel.send, anyio.Event(), timeout, kernel.nudge)
    return conversation, kernel


async def test_a_kernel_answering_on_both_channels_is_ready_and_not_stalled() -> None:
    conversation, kernel = await _probe(("iopub", "shell"), timeout=5)
    assert conversation.answered.is_set() and not conversation.stalled
    assert len(kernel.sent) == 1


async def test_probes_answered_on_iopub_only_stop_once_the_kernel_counts_as_stalled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: such a kernel was probed for the whole startup timeout (60 s)
    and then failed the start; now it is given up after ``STALL`` seconds."""
    monkeypatch.setattr(conversation_module, "STALL", 0.3)
    conversation, kernel = await _probe(("iopub",), timeout=8)
    assert conversation.stalled and not conversation.answered.is_set()
    assert kernel.nudges >= 1, "the sockets were asked to look again between probes"
    assert "answered on iopub only" in conversation.unanswered()


async def test_a_silent_kernel_is_not_stalled_only_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conversation_module, "STALL", 0.1)
    conversation, _ = await _probe((), timeout=0.5)
    assert not conversation.stalled and not conversation.answered.is_set()


def _news(msg_type: str, parent: str, **content: Any) -> dict[str, Any]:
    return {"msg_type": msg_type, "parent_header": {"msg_id": parent}, "content": content}


async def test_iopub_news_of_an_ended_run_is_not_needed_but_its_output_is() -> None:
    """Regression: a display sent after its run ended was parsed in full, then
    dropped; a thread flooding 1 MB displays kept the event loop busy parsing."""
    conversation = _conversation()
    display = _news("display_data", "run-1")
    assert conversation.needed("iopub", display)
    await conversation.dispatch("iopub", _news("status", "run-1", execution_state="idle"))
    await conversation.dispatch("shell", _news("execute_reply", "run-1", status="ok"))
    assert not conversation.needed("iopub", display)
    assert conversation.needed("iopub", _news("stream", "run-1"))  # late output is kept
    assert conversation.needed("stdin", _news("input_request", "run-1"))
    assert conversation.needed("iopub", _news("display_data", "run-2"))
