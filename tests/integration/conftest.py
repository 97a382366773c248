"""Fixtures for the integration tier: real kernels, real processes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from lmc_runtime import Computer, Message, Timeouts


@dataclass
class Result:
    """Everything one execution streamed back."""

    messages: list[Message] = field(default_factory=list)

    @property
    def output(self) -> str:
        return "".join(
            m.content for m in self.messages if m.type == "console" and m.format == "output"
        )

    @property
    def lines(self) -> list[int | None]:
        return [m.content for m in self.messages if m.format == "active_line"]

    @property
    def final(self) -> Message:
        return self.messages[-1]

    @property
    def status(self) -> Any:
        return (self.final.extras or {}).get("status")

    def of(self, type_: str, format_: str | None = None) -> list[Message]:
        return [
            m for m in self.messages if m.type == type_ and (format_ is None or m.format == format_)
        ]


def run(computer: Computer, code: str, language: str = "python", **kwargs: Any) -> Result:
    return Result(list(computer.run(language, code, **kwargs)))


def assert_lines(seen: list[int | None], expected: list[int]) -> None:
    """A run's active lines against its statements' lines, ``expected``: they come
    in that order, the first of them first, then None, and no other line comes.
    The pacer shows a line only once the one before has been shown long enough,
    so a reader the host held up may see a later line in place of an earlier one."""
    assert seen and seen[-1] is None, seen
    shown = seen[:-1]
    assert shown[:1] == expected[:1], f"{seen} does not start with {expected[0]}"
    rest = iter(expected)
    assert all(line in rest for line in shown), f"{seen} is not in order within {expected}"


def run_interrupting(
    computer: Computer,
    code: str,
    language: str,
    when: Callable[[Message], bool],
    **kwargs: Any,
) -> Result:
    """Run ``code``; once ``when`` accepts a message, ``interrupt()`` from another thread."""
    seen = threading.Event()
    thread = threading.Thread(target=lambda: seen.wait(60) and computer.interrupt(), daemon=True)
    thread.start()
    messages: list[Message] = []
    try:
        for message in computer.run(language, code, **kwargs):
            messages.append(message)
            if when(message):
                seen.set()
    finally:
        seen.set()
        thread.join(60)
    return Result(messages)


@pytest.fixture
def computer() -> Iterator[Computer]:
    """A fresh Computer for one test (its Python kernel starts on the first run)."""
    with Computer(timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c
