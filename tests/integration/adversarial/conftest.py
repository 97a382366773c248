"""Adversarial probes of lmc-runtime's promises, on real ipykernels.

The promises under attack (README, and the executor's docstrings): every
message gets an answer; malformed input, unknown languages and code that hangs,
floods output, crashes or misbehaves each get a clear computer-role message;
never a hang and never an exception into the caller's loop (except
``UsageError`` for API misuse); nothing lost; output in order; timeouts and
``interrupt()`` really stop the code; a dead kernel is reported and restarted;
``input()`` is answered by ``on_input`` or fails fast; the last message of
every execution is ``console``/``active_line`` with content ``None``. What
every language must do alike is in ``tests/contract``; these are the
Python-specific and executor-level attacks.

Every test is bounded: executions carry timeouts, threads are joined with a
timeout, and waits poll an observable signal until a deadline.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from lmc_runtime import Computer, Timeouts

from ..conftest import Result

#: Bounds a wait that only a hang comes near.
GUARD = 30.0


def code_msg(content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "type": "code", "format": "python", "content": content, **extra}


def assert_well_formed(result: Result, reply_to: str | None = None) -> None:
    """The invariants every execution must satisfy."""
    assert result.messages, "no answer at all"
    final = result.final
    assert final.type == "console" and final.format == "active_line" and final.content is None, (
        f"last message is not active_line null: {final!r}"
    )
    assert all(m.role == "computer" for m in result.messages)
    assert [m for m in result.messages if m.format == "active_line" and m.content is None] == [
        final
    ]
    if reply_to is not None:
        assert all(m.in_reply_to == reply_to for m in result.messages)


def collect(computer: Computer, *args: Any, **kwargs: Any) -> Result:
    return Result(list(computer.run(*args, **kwargs)))


class Background:
    """A run in another thread; ``printed`` is set once it has printed something."""

    def __init__(self, computer: Computer, code: str, **kwargs: Any) -> None:
        self.printed = threading.Event()
        self.messages: list[Any] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(computer, code), kwargs=kwargs, daemon=True
        )
        self._thread.start()

    def _run(self, computer: Computer, code: str, **kwargs: Any) -> None:
        try:
            for message in computer.run("python", code, **kwargs):
                self.messages.append(message)
                if message.format == "output":
                    self.printed.set()
        except BaseException as exc:  # reported by result()
            self.error = exc
        finally:
            self.printed.set()

    def wait_printed(self) -> None:
        assert self.printed.wait(GUARD), "the run printed nothing"

    def result(self) -> Result:
        self._thread.join(GUARD)
        assert not self._thread.is_alive(), "the run did not end"
        if self.error is not None:
            raise self.error
        return Result(self.messages)


@pytest.fixture
def c() -> Iterator[Computer]:
    """A fresh Computer with a short default timeout, as an agent loop would use it."""
    with Computer(timeouts=Timeouts(execution=15, interrupt_grace=1.0)) as computer:
        yield computer
