"""A kernel's messages as the items of a run, and when a run is over."""

from __future__ import annotations

from typing import Any

from lmc_runtime.backends.core import Finished, Line, Output
from lmc_runtime.backends.jupyter.items import (
    InputRequest,
    Progress,
    Reply,
    RunEnds,
    asks_exit,
    to_item,
)
from lmc_runtime.backends.jupyter.translate import ACTIVE_LINE_MSG_TYPE, INPUT_REQUEST_MSG_TYPE
from lmc_runtime.replies import Status


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


def test_busy_is_dropped_progress_is_told_the_rest_travels_as_replies() -> None:
    assert _item("iopub", _msg("status", execution_state="busy")) is None
    assert _item("iopub", _idle()) == Progress("idle")
    assert _item("iopub", _msg("execute_input", code="1")) == Progress("begun")
    page = [{"source": "page", "data": {"text/plain": "help"}}]
    reply = _item("shell", _msg("execute_reply", status="ok", execution_count=3, payload=page))
    assert isinstance(reply, Reply) and reply.msg["content"]["execution_count"] == 3


def test_an_execute_reply_without_a_payload_is_no_item() -> None:
    """Guards the saved wake-up: a reply with nothing to show is read by the run's
    end (its Finished), not handed to the run as an item it drops."""
    assert _item("shell", _msg("execute_reply", status="ok", execution_count=3)) is None
    assert _item("shell", _msg("execute_reply", status="ok", payload=[])) is None


def test_exit_payloads() -> None:
    assert asks_exit(_msg("execute_reply", payload=[{"source": "ask_exit", "keepkernel": False}]))
    assert not asks_exit(
        _msg("execute_reply", payload=[{"source": "ask_exit", "keepkernel": True}])
    )
    assert not asks_exit(_msg("execute_reply", payload=[{"source": "page"}]))
    assert not asks_exit(_msg("kernel_info_reply"))


def _idle() -> dict[str, Any]:
    return _msg("status", execution_state="idle")


def test_a_run_ends_with_idle_and_reply_in_either_order_with_the_reply_status() -> None:
    ends = RunEnds()
    assert ends.see("iopub", _idle(), "a") is None
    reply = _msg("execute_reply", status="error", execution_count=7)
    assert ends.see("shell", reply, "a") is reply
    assert ends.finished(reply) == Finished(Status.ERROR, {"execution_count": 7})
    assert ends.see("shell", _msg("execute_reply", status="aborted"), "b") is None
    assert ends.see("iopub", _msg("stream", name="stdout", text="x"), "b") is None
    done = ends.see("iopub", _idle(), "b")
    assert done is not None and ends.finished(done).status == Status.ABORTED


def test_runs_are_told_apart_and_forgotten_once_over() -> None:
    """Regression guard: the idle of one request must not end another."""
    ends = RunEnds()
    assert ends.see("iopub", _idle(), "a") is None
    assert ends.see("shell", _msg("execute_reply", status="ok"), "b") is None
    assert ends.see("iopub", _idle(), "b") is not None
    assert ends.see("iopub", _idle(), "b") is None, "a run ends once"
