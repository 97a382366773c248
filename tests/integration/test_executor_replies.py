"""Messages the computer cannot run get a "not understood" reply, never an exception."""

from __future__ import annotations

from typing import Any

import pytest

from lmc_runtime import Computer


@pytest.mark.parametrize(
    ("message", "status", "phrase"),
    [
        ({"role": "assistant", "type": "code", "format": "python"}, "not_understood", None),
        (
            {"role": "assistant", "type": "code", "format": "python", "content": 5},
            "malformed",
            "must be a string",
        ),
        (
            {"role": "robot", "type": "code", "format": "python", "content": "1"},
            "malformed",
            "role",
        ),
        (
            {"role": "user", "type": "message", "content": "hi"},
            "not_understood",
            "only assistant code",
        ),
        (
            {"role": "assistant", "type": "code", "format": "cobol", "content": "x"},
            "not_understood",
            "unknown language 'cobol'",
        ),
        (
            {"role": "assistant", "type": "code", "format": "python", "content": "1", "bogus": 1},
            "malformed",
            "bogus",
        ),
    ],
)
def test_malformed_or_unrunnable_messages_are_answered(
    computer: Computer, message: Any, status: str, phrase: str | None
) -> None:
    replies = list(computer.run(message))
    assert len(replies) == 1
    reply = replies[0]
    assert reply.role == "computer" and reply.type == "console" and reply.format == "output"
    assert reply.content.startswith("[lmc] not understood")
    if phrase is not None:
        assert phrase in reply.content
    if status != "not_understood" or phrase is not None:
        assert reply.extras["status"] == status  # type: ignore[index]


def test_a_not_understood_reply_points_at_the_message_id(computer: Computer) -> None:
    (reply,) = computer.run({"role": "user", "type": "message", "content": "hi", "id": "u1"})
    assert reply.in_reply_to == "u1"


def test_aliases_route_to_python(computer: Computer) -> None:
    assert (
        "".join(m.content for m in computer.run("py", "print(3)") if m.format == "output") == "3\n"
    )


def test_languages_reports_python_available() -> None:
    status = Computer().languages["python"]
    assert status.available and status.reason is None and "py" in status.aliases


def test_interrupt_while_the_kernel_starts_stops_the_run_before_it_runs() -> None:
    """Regression: an interrupt that came while the session was still starting
    was lost, and the code then ran to completion (or its timeout)."""
    import threading

    with Computer() as computer:
        messages: list[Any] = []
        consumer = threading.Thread(
            target=lambda: messages.extend(
                computer.run("python", "import time\ntime.sleep(30)\nprint('ran')")
            )
        )
        consumer.start()
        started = threading.Event()
        started.wait(0.1)  # the run is under way; a kernel takes far longer to start
        computer.interrupt()
        consumer.join(60)
        assert not consumer.is_alive()
        assert messages[-1].content is None
        assert (messages[-1].extras or {}).get("status") == "interrupted"
        assert "before it started" in "".join(str(m.content) for m in messages)
        after = list(computer.run("python", "print('next')"))
        assert any(m.content == "next\n" for m in after)
