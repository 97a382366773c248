"""A kernel's messages as the items of a run, and the route that sees a run's end."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from lmc_runtime.backends.core import Line, Output
from lmc_runtime.backends.jupyter.items import (
    InputRequest,
    JupyterRoute,
    Reply,
    asks_exit,
    to_item,
)
from lmc_runtime.backends.jupyter.translate import ACTIVE_LINE_MSG_TYPE, INPUT_REQUEST_MSG_TYPE

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _msg(msg_type: str, **content: Any) -> dict[str, Any]:
    return {"msg_type": msg_type, "content": content}


def _item(channel: str, msg: dict[str, Any]) -> Any:
    return to_item(channel, msg, lambda value: None, announced=True)


def test_stream_output_becomes_core_output_so_the_core_joins_it() -> None:
    assert _item("iopub", _msg("stream", name="stdout", text="hi\n")) == Output("hi\n")
    assert _item("iopub", _msg("stream", name="stderr", text="x")) == Output("x", "stderr")


def test_active_lines_become_lines_and_invalid_ones_nothing() -> None:
    assert _item("iopub", _msg(ACTIVE_LINE_MSG_TYPE, line=4)) == Line(4)
    assert _item("iopub", _msg(ACTIVE_LINE_MSG_TYPE, line=0)) is None
    assert _item("iopub", _msg(ACTIVE_LINE_MSG_TYPE, line="4")) is None


def test_input_requests_from_both_channels_can_answer_themselves() -> None:
    answers: list[str] = []
    for channel, msg_type in (("stdin", "input_request"), ("iopub", INPUT_REQUEST_MSG_TYPE)):
        item = to_item(channel, _msg(msg_type, prompt="? "), answers.append, announced=False)
        assert isinstance(item, InputRequest)
        assert (item.channel, item.content["prompt"], item.announced) == (channel, "? ", False)
        item.answer(channel)
    assert answers == ["stdin", "iopub"]


def test_busy_status_and_echoed_input_are_dropped_the_rest_travels_as_replies() -> None:
    assert _item("iopub", _msg("status", execution_state="busy")) is None
    assert _item("iopub", _msg("execute_input", code="1")) is None
    idle = _item("iopub", _msg("status", execution_state="idle"))
    assert isinstance(idle, Reply) and idle.msg_type == "status"
    reply = _item("shell", _msg("execute_reply", status="ok", execution_count=3))
    assert isinstance(reply, Reply) and reply.content["execution_count"] == 3


def test_exit_payloads() -> None:
    assert asks_exit(_msg("execute_reply", payload=[{"source": "ask_exit", "keepkernel": False}]))
    assert not asks_exit(
        _msg("execute_reply", payload=[{"source": "ask_exit", "keepkernel": True}])
    )
    assert not asks_exit(_msg("execute_reply", payload=[{"source": "page"}]))
    assert not asks_exit(_msg("kernel_info_reply"))


def _idle() -> Reply:
    return Reply("iopub", _msg("status", execution_state="idle"))


async def test_an_abandoned_route_never_blocks_the_reader_and_still_finishes() -> None:
    """Regression (wedge): output for a run whose caller left filled the route's
    buffer and blocked the one reader that serves every request of the kernel."""
    route = JupyterRoute("m", "tag")
    route.receive.close()  # what Execution.abandon does
    with anyio.fail_after(5):
        for i in range(5000):
            await route.put(Output(f"{i}\n"))
        await route.put(Reply("shell", _msg("execute_reply", status="ok")))
        assert not route.finished.is_set()
        await route.put(_idle())
    assert route.finished.is_set(), "the watchdog still learns the kernel is done"


async def test_a_run_ends_with_idle_and_reply_in_either_order() -> None:
    route = JupyterRoute("m", "tag")
    await route.put(_idle())
    assert not route.finished.is_set()
    await route.put(Reply("shell", _msg("execute_reply", status="ok")))
    assert route.finished.is_set() and route.attention.is_set()


async def test_a_reply_asking_to_exit_does_not_end_the_run() -> None:
    """The kernel is ended instead; the run ends with that."""
    route = JupyterRoute("m", "tag")
    await route.put(Reply("shell", _msg("execute_reply", payload=[{"source": "ask_exit"}])))
    await route.put(_idle())
    assert not route.finished.is_set()
