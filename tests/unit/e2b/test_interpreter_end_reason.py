"""An E2B run the runtime ended (a kernel that could not start, a timeout)
ends with an error that says why, from the runtime's own notice: the client
sees the reason, not only the status."""

from __future__ import annotations

from lmc_runtime import replies
from lmc_runtime.e2b.interpreter.events import Events


def test_a_backend_failure_names_its_reason_in_the_error() -> None:
    events = Events()
    reason = "the python backend failed: the kernel's sockets are not usable"
    out = [
        *events.feed(replies.notice(reason, replies.Status.BACKEND_ERROR, "r")),
        *events.feed(replies.active_line(None, "r", status=replies.Status.BACKEND_ERROR)),
    ]
    assert [e["type"] for e in out] == ["stderr", "error"]
    assert out[1]["name"] == "BackendError"
    assert out[1]["value"] == f"the execution ended: backend error: {reason}"


def test_a_notice_of_another_status_is_not_taken_for_the_reason() -> None:
    events = Events()
    out = [
        *events.feed(replies.notice("the output was cut", "truncated", "r")),
        *events.feed(replies.active_line(None, "r", status="timeout")),
    ]
    assert out[-1]["value"] == "the execution ended: timeout"
