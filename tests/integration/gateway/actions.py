"""Runs on a gateway's kernel with something done to it meanwhile, shared by the
gateway tests (Kernel Gateway and Enterprise Gateway alike)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from lmc_runtime import Computer, Message

from ..conftest import Result, run, run_interrupting

__all__ = ["assert_an_interrupt_keeps_the_state", "run_then"]


def run_then(computer: Computer, code: str, action: Callable[[], object]) -> Result:
    """Run Python ``code``; at its first output, call ``action`` (once, on another thread)."""
    messages: list[Message] = []
    worker: threading.Thread | None = None
    for message in computer.run("python", code):
        messages.append(message)
        if worker is None and message.format == "output":
            worker = threading.Thread(target=action, daemon=True)
            worker.start()
    assert worker is not None, "the code wrote no output"
    worker.join(60)
    return Result(messages)


def assert_an_interrupt_keeps_the_state(computer: Computer) -> None:
    """A busy loop interrupted at its first active line ends ``interrupted``, and
    what was defined before it is still there."""
    run(computer, "kept = 'still here'")
    result = run_interrupting(
        computer,
        "import time\nwhile True:\n    time.sleep(0.01)",
        "python",
        lambda m: m.format == "active_line" and m.content is not None,
    )
    assert result.status == "interrupted" and (result.final.extras or {})["state_lost"] is False
    assert run(computer, "print(kept)").output == "still here\n"
