"""How an execution's LMC messages become E2B's ``/execute`` events, and how a
Jupyter display keeps its whole bundle on the way (``extras.display``), charged
by the output budget."""

from __future__ import annotations

from typing import Any

import pytest

from lmc_runtime import replies
from lmc_runtime.backends.jupyter.translate import CHART_MIME, translate_iopub
from lmc_runtime.budget import within_budget
from lmc_runtime.config import Limits
from lmc_runtime.e2b.interpreter.events import Events, result_event
from lmc_runtime.e2b.interpreter.languages import chdir_code, e2b_language
from lmc_runtime.messages import Message

PNG = "iVBORw0KGgo="


def iopub(msg_type: str, **content: Any) -> dict[str, Any]:
    return {"msg_type": msg_type, "content": content}


async def events_of(messages: list[Message]) -> list[dict[str, Any]]:
    events = Events()
    out = []
    for message in messages:
        out.extend(events.feed(message))
    return out


@pytest.mark.anyio
async def test_an_execute_result_is_the_main_result_with_every_format() -> None:
    bundle = {"text/plain": "'hi'", "text/html": "<b>hi</b>", "text/latex": "$hi$"}
    messages = await translate_iopub(iopub("execute_result", data=bundle), "r")
    (event,) = await events_of(messages)
    assert event == {
        "type": "result",
        "is_main_result": True,
        "text": "hi",  # a string's repr loses its quotes, as in E2B
        "html": "<b>hi</b>",
        "latex": "$hi$",
    }


@pytest.mark.anyio
async def test_a_figure_keeps_its_png_text_and_chart_and_nothing_is_extra() -> None:
    chart = {"type": "line", "title": "t", "elements": []}
    bundle = {"image/png": PNG, "text/plain": "<Figure>", CHART_MIME: chart}
    messages = await translate_iopub(iopub("display_data", data=bundle), "r")
    assert messages[0].type == "image"
    assert CHART_MIME not in (messages[0].extras or {})["display"]["data"]  # carried once
    (event,) = await events_of(messages)
    assert event["png"] == PNG and event["text"] == "<Figure>" and event["chart"] == chart
    assert not event["is_main_result"] and "extra" not in event


@pytest.mark.anyio
async def test_unknown_types_are_extra_and_a_displays_parts_send_nothing() -> None:
    bundle = {"text/html": "<i>x</i>", "text/plain": "x", "application/x-own": "own"}
    messages = await translate_iopub(iopub("display_data", data=bundle), "r")
    assert len(messages) == 2  # the HTML, then its text for lmc's clients
    (event,) = await events_of(messages)
    assert event["extra"] == {"application/x-own": "own"}


@pytest.mark.anyio
async def test_streams_errors_and_the_end() -> None:
    error = iopub(
        "error", ename="ValueError", evalue="bad", traceback=["Traceback", "ValueError: bad"]
    )
    messages = [
        replies.output("out\n", "r"),
        replies.output("err\n", "r", stream="stderr"),
        *await translate_iopub(error, "r"),
        replies.active_line(None, "r", status="error", error="ValueError", execution_count=4),
    ]
    events = Events()
    out = [e for m in messages for e in events.feed(m)]
    assert [e["type"] for e in out] == ["stdout", "stderr", "error"]
    assert out[2] == {
        "type": "error",
        "name": "ValueError",
        "value": "bad",
        "traceback": "Traceback\nValueError: bad\n",
    }
    assert events.execution_count == 4 and events.status == "error"


@pytest.mark.anyio
async def test_a_run_the_runtime_stopped_ends_with_an_error_naming_why() -> None:
    out = await events_of([replies.active_line(None, "r", status="timeout")])
    assert out == [
        {
            "type": "error",
            "name": "TimeoutError",
            "value": "the execution ended: timeout",
            "traceback": "",
        }
    ]


@pytest.mark.anyio
async def test_a_text_displays_bundle_is_charged_by_the_budget() -> None:
    big = {"text/plain": "small", "text/markdown": "# m", "application/x-big": "b" * 10_000}
    messages = await translate_iopub(iopub("display_data", data=big), "r")
    display = (messages[0].extras or {})["display"]
    assert display["shown"] == "text/markdown"  # the content: not twice in the bundle
    assert set(display["data"]) == {"text/plain", "application/x-big"}

    async def stream() -> Any:
        for message in messages:
            yield message
        yield replies.active_line(None, "r", status="ok")

    limits = Limits(output_bytes=4_000)
    kept = [m async for m in within_budget(stream(), limits, "r")]
    display = (kept[0].extras or {})["display"]
    assert "data" not in display  # did not fit: left out, the text goes on
    (event,) = await events_of(kept[:1])
    assert event == {"type": "result", "is_main_result": False, "markdown": "# m"}


def test_language_names_and_working_directories() -> None:
    assert [e2b_language(n) for n in (None, "JS", "ts", "R")] == [
        "python",
        "javascript",
        "typescript",
        "r",
    ]
    assert chdir_code("python", "/tmp/a'b") == (
        'import os as _lmc_os; _lmc_os.chdir("/tmp/a\'b"); del _lmc_os'
    )
    assert chdir_code("bash", "/tmp/a'b") == "cd '/tmp/a'\\''b'"
    assert chdir_code("cobol", "/tmp") is None


def test_result_fields_take_objects_only_where_e2b_has_objects() -> None:
    event = result_event({"application/json": "not an object", "e2b/data": {"a": [1]}}, main=False)
    assert "json" not in event and event["data"] == {"a": [1]}


@pytest.mark.anyio
async def test_a_refused_run_is_an_error_with_the_reason() -> None:
    refusal = replies.not_understood("extras.env has an invalid variable name 'A=B'", "r")
    (event,) = await events_of([refusal])
    assert event["type"] == "error" and event["name"] == "InvalidRequest"
    assert event["value"] == "extras.env has an invalid variable name 'A=B'"


def test_a_java_run_starts_by_setting_its_variables_as_properties() -> None:
    from lmc_runtime.e2b.interpreter.languages import java_properties

    said = java_properties({"WIDE": "w"}, {"RUN": 'say "hi"\n'}, frozenset({"OLD", "WIDE"}))
    assert said == (
        'System.clearProperty("OLD"); System.setProperty("WIDE", "w"); '
        'System.setProperty("RUN", "say \\"hi\\"\\n"); '
    )
    assert "\n" not in said  # the code's first line stays its first
    assert java_properties({}, {}, frozenset()) == ""
