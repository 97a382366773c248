"""lmc_runtime.budget.filter.within_budget on scripted streams: every message is charged,
displays included, so neither large displays nor floods of tiny messages get
more than the budget back."""

from __future__ import annotations

import base64
import itertools
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import anyio

from lmc_runtime import Limits, replies
from lmc_runtime.budget.filter import within_budget
from lmc_runtime.messages import Message
from lmc_runtime.replies import Status

REPLY = "c1"
#: What the budget charges for each message beyond its content.
MESSAGE_OVERHEAD = 64
#: The budget's own messages beyond the budget: the marker, one notice, the final.
SLACK = 1500


def _collect(messages: Iterable[Message], limit: int, tmp_path: Path) -> list[Message]:
    async def source() -> AsyncIterator[Message]:
        for message in messages:
            yield message

    async def main() -> list[Message]:
        limits = Limits(output_bytes=limit, spill_dir=tmp_path)
        return [m async for m in within_budget(source(), limits, REPLY)]

    return anyio.run(main)


def _final() -> Message:
    return replies.active_line(None, REPLY, status=Status.OK)


def _charged(messages: list[Message]) -> int:
    """What the messages cost: content bytes plus the overhead of each."""
    total = 0
    for m in messages:
        content = m.content if isinstance(m.content, str) else ""
        total += len(content.encode()) + MESSAGE_OVERHEAD
    return total


def _wire(messages: list[Message]) -> int:
    return sum(len(m.model_dump_json()) for m in messages)


def _truncated(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.status == Status.TRUNCATED]


def test_html_displays_are_charged_and_cut_past_the_budget(tmp_path: Path) -> None:
    """Regression: HTML displays went through uncounted, so 100 displays of 4 MB
    each came back whole (400 MB) under a 64K budget, with no truncated status."""
    limit = 64_000
    page = "<p>" + "h" * 1_000_000 + "</p>"
    script = [replies.html(page, REPLY) for _ in range(100)]
    out = _collect([*script, _final()], limit, tmp_path)
    assert out[-1].is_final and out[-1].status == Status.OK
    assert _charged(out) <= limit + SLACK, f"{_charged(out)} bytes returned"
    (notice,) = _truncated(out)
    assert notice.extras is not None and notice.extras["omitted_displays"] == 100
    assert "100 displays" in notice.content and "not shown" in notice.content


def test_images_are_charged_by_their_base64_and_cut_past_the_budget(tmp_path: Path) -> None:
    """Regression: images went through uncounted; a flood of them is now cut to
    what fits, with one notice, while text around them keeps its order."""
    limit = 64_000
    data = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(15_000)).decode()
    script: list[Message] = []
    for i in range(200):
        script.append(replies.output(f"before {i}\n", REPLY))
        script.append(replies.image(data, "image/png", REPLY))
    out = _collect([*script, _final()], limit, tmp_path)
    assert _charged(out) <= limit + SLACK, f"{_charged(out)} bytes returned"
    images = [m for m in out if m.type == "image"]
    assert 0 < len(images) <= limit // len(data)
    (notice,) = [m for m in _truncated(out) if (m.extras or {}).get("omitted_displays")]
    assert notice.extras is not None and notice.extras["omitted_displays"] == 200 - len(images)
    shown = [m for m in out if m.format == "output" and not m.content.startswith(("[", "\n["))]
    text = "".join(m.content for m in shown)
    assert text.startswith("before 0\nbefore 1\nbefore 2\n") and text.endswith("before 199\n")
    first_image = out.index(images[0])
    assert out[first_image - 1].content == "before 0\n", "text before a display goes first"


def test_tiny_outputs_of_two_streams_are_charged_per_message(tmp_path: Path) -> None:
    """Regression: 300k alternating stdout/stderr lines were counted by their text
    alone and the kept tail went back one message a line: 43k messages, 9.7 MB
    under a 250K budget. Each message now costs its overhead too."""
    limit = 256_000
    out_line = replies.output("1\n", REPLY)
    err_line = replies.output("2\n", REPLY, stream="stderr")
    script = [out_line, err_line] * 150_000
    out = _collect([*script, _final()], limit, tmp_path)
    assert out[-1].is_final and out[-1].status == Status.OK
    assert _charged(out) <= limit + SLACK, f"{_charged(out)} bytes returned"
    assert len(out) <= limit // MESSAGE_OVERHEAD + 3, f"{len(out)} messages"
    assert _wire(out) < 4 * limit, f"{_wire(out)} bytes of JSON"
    (marker,) = _truncated(out)
    assert marker.extras is not None
    assert marker.extras["total_bytes"] == 600_000
    assert out[-2].content == "2\n" and (out[-2].extras or {}).get("stream") == "stderr"
    saved = Path(marker.extras["output_path"]).read_text()
    assert saved == "1\n2\n" * 150_000


def test_a_cut_tail_of_one_stream_comes_back_as_one_message(tmp_path: Path) -> None:
    """Regression: past the budget, the kept tail went back one message per piece;
    consecutive pieces of one stream now go back merged."""
    limit = 10_000
    script = [replies.output(f"{i}\n", REPLY) for i in range(50_000)]
    out = _collect([*script, _final()], limit, tmp_path)
    (marker,) = _truncated(out)
    after = out[out.index(marker) + 1 : -1]
    assert len(after) == 1, f"the tail came in {len(after)} messages"
    assert after[0].content.endswith("49998\n49999\n")
    assert _charged(out) <= limit + SLACK


def test_the_tail_of_two_streams_keeps_runs_of_each(tmp_path: Path) -> None:
    """Past the budget, stdout and stderr stay apart in the tail: each run of one
    stream is one message with its extras."""
    limit = 10_000
    script: list[Message] = []
    for i in range(2_000):
        script += [replies.output(f"o{i}\n", REPLY) for _ in range(3)]
        script.append(replies.output(f"e{i}\n", REPLY, stream="stderr"))
    out = _collect([*script, _final()], limit, tmp_path)
    (marker,) = _truncated(out)
    tail = out[out.index(marker) + 1 : -1]
    streams = [(m.extras or {}).get("stream") for m in tail]
    assert all(a != b for a, b in itertools.pairwise(streams)), "runs are merged"
    assert tail[-2].content == "o1999\n" * 3 and tail[-1].content == "e1999\n"


def test_runtime_notes_past_the_budget_are_bounded_and_the_last_kept(tmp_path: Path) -> None:
    """Regression: each runtime note (a display that could not be converted makes
    one) started the budget over, so a flood of them multiplied it; now they are
    charged, and past the budget only the last few are kept."""
    limit = 8_000
    flood = [
        replies.notice("The image/gif display could not be shown: bad data.", "error", REPLY)
        for _ in range(20_000)
    ]
    between = [replies.output("x" * 500 + "\n", REPLY) for _ in range(100)]
    ending = replies.notice("Execution timed out.", Status.TIMEOUT, REPLY)
    script = [
        *between,
        *flood,
        *between,
        ending,
        replies.active_line(None, REPLY, status="timeout"),
    ]
    out = _collect(script, limit, tmp_path)
    assert _charged(out) <= limit + SLACK, f"{_charged(out)} bytes returned"
    assert out[-2] is ending and out[-1].is_final
    notices = [m for m in out if (m.extras or {}).get("omitted_notes")]
    assert len(notices) == 1


def test_output_and_displays_within_the_budget_pass_whole_and_in_order(tmp_path: Path) -> None:
    """Within the budget nothing changes: every message, in order, no marker."""
    data = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(300)).decode()
    script = [
        replies.output("a\n", REPLY),
        replies.output("b\n", REPLY, stream="stderr"),
        replies.image(data, "image/png", REPLY),
        replies.output("c\n", REPLY),
        replies.html("<b>hi</b>", REPLY),
        replies.notice("a note", "error", REPLY),
        replies.output("d\n", REPLY),
        _final(),
    ]
    out = _collect(script, 100_000, tmp_path)
    assert [(m.type, m.content) for m in out] == [(m.type, m.content) for m in script]
    assert not _truncated(out)


def test_text_past_the_budget_then_a_display_leaves_the_display_out(tmp_path: Path) -> None:
    """A display after output went past the budget does not fit: one notice says
    so, after the marker and the tail of the text."""
    limit = 4_000
    data = base64.b64encode(bytes(600)).decode()
    script = [replies.output("y" * 99 + "\n", REPLY) for _ in range(200)]
    script += [replies.image(data, "image/png", REPLY), replies.output("end\n", REPLY), _final()]
    out = _collect(script, limit, tmp_path)
    assert not [m for m in out if m.type == "image"]
    marker, notice = _truncated(out)
    assert "bytes omitted" in marker.content and (notice.extras or {})["omitted_displays"] == 1
    assert out.index(marker) < out.index(notice) < len(out) - 1
    assert out[out.index(notice) - 1].content.endswith("end\n")
    assert _charged(out) <= limit + SLACK


def test_the_overhead_charged_is_the_one_declared() -> None:
    from lmc_runtime.budget.filter import MESSAGE_OVERHEAD as declared

    assert declared == MESSAGE_OVERHEAD
