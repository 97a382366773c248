"""Running code for the contract tests, and the checks every run must pass.

Every wait here is bounded: each run carries an execution timeout (``GUARD``
unless the timeout is the point of the test), which only a hang comes near,
and threads are joined with a timeout. Waits for something the code does
(a file it creates, a process ending) poll that observable signal until a
deadline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmc_runtime import Computer, Message
from lmc_runtime.messages import new_id

from .languages import Profile

__all__ = [
    "GRACE",
    "GUARD",
    "ComputerFactory",
    "Result",
    "assert_ends_once",
    "process_gone",
    "run",
    "run_interrupted",
    "wait_for",
]

#: Bounds a run or a wait that must end well before it: only a hang reaches it.
GUARD = 30.0
#: How long stopped code has to stop before its interpreter is restarted: short,
#: but long enough that a busy machine does not turn an interrupt into a restart.
GRACE = 4.0

#: Opens a fresh Computer (the ``make_computer`` fixture); keywords go to ``Computer``.
ComputerFactory = Callable[..., Computer]


@dataclass
class Result:
    """Everything one run streamed back, and the id of the code message it answers."""

    reply_to: str
    messages: list[Message] = field(default_factory=list)

    @property
    def final(self) -> Message:
        return self.messages[-1]

    @property
    def extras(self) -> dict[str, Any]:
        return self.final.extras or {}

    @property
    def status(self) -> str | None:
        return self.final.status

    @property
    def outputs(self) -> list[Message]:
        """Console output of this run (late output of earlier runs left out)."""
        return [
            m for m in self.messages if m.format == "output" and not (m.extras or {}).get("late")
        ]

    @property
    def late(self) -> list[Message]:
        return [m for m in self.messages if m.format == "output" and (m.extras or {}).get("late")]

    @property
    def notices(self) -> list[Message]:
        """The runtime's own notes (``[lmc] ...``)."""
        return [m for m in self.outputs if str(m.content).startswith("[lmc]")]

    @property
    def output(self) -> str:
        """What the code printed in this run: its output without the runtime's notes."""
        return "".join(str(m.content) for m in self.outputs if m not in self.notices)

    @property
    def text(self) -> str:
        """Every console output of this run, notes included."""
        return "".join(str(m.content) for m in self.outputs)

    @property
    def lines(self) -> list[int | None]:
        return [m.content for m in self.messages if m.format == "active_line"]

    def statuses(self) -> list[str | None]:
        """The status of every message that carries one, in order."""
        return [m.status for m in self.messages if m.status is not None]

    def describe(self) -> str:
        return "\n".join(
            f"  {m.type}/{m.format} {str(m.content)[:200]!r} {m.extras or ''}"
            for m in self.messages
        )


def code_message(profile: Profile, code: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "type": "code",
        "format": profile.name,
        "content": code,
        "id": new_id(),
    }


def run(
    computer: Computer,
    profile: Profile,
    code: str,
    *,
    timeout: float = GUARD,
    env: dict[str, str] | None = None,
) -> Result:
    """Run ``code`` to its end; the run's own timeout bounds it."""
    message = code_message(profile, code)
    result = Result(message["id"])
    for reply in computer.run(message, timeout=timeout, env=env):
        result.messages.append(reply)
    return result


def run_interrupted(
    computer: Computer,
    profile: Profile,
    code: str,
    *,
    when: Callable[[Message], bool],
) -> tuple[Result, bool]:
    """Run ``code`` and call ``interrupt()`` from another thread once ``when`` sees a message.

    Returns the result and whether the interrupt was sent while the run was
    still streaming.
    """
    seen = threading.Event()
    ended = threading.Event()
    sent: list[bool] = []

    def interrupter() -> None:
        seen.wait(GUARD)
        if not ended.is_set():
            computer.interrupt()
            sent.append(True)

    thread = threading.Thread(target=interrupter, daemon=True)
    thread.start()
    message = code_message(profile, code)
    result = Result(message["id"])
    try:
        for reply in computer.run(message, timeout=GUARD):
            result.messages.append(reply)
            if not seen.is_set() and when(reply):
                seen.set()
    finally:
        ended.set()
        seen.set()
        thread.join(GUARD)
    assert not thread.is_alive(), "interrupt() did not return"
    return result, bool(sent)


def assert_ends_once(result: Result) -> None:
    """Exactly one final message (``active_line`` null), it is the last, and every
    message is the computer's answer to the code message (late output excepted:
    it answers the run it came from)."""
    assert result.messages, "the run was not answered at all"
    finals = [i for i, m in enumerate(result.messages) if m.is_final]
    assert finals == [len(result.messages) - 1], (
        f"expected one final message, last; got them at {finals}:\n{result.describe()}"
    )
    assert all(m.role == "computer" for m in result.messages)
    strays = [
        m for m in result.messages if m not in result.late and m.in_reply_to != result.reply_to
    ]
    assert not strays, f"messages answering another code message:\n{strays}"


def wait_for(condition: Callable[[], bool], what: str, timeout: float = GUARD) -> None:
    """Poll ``condition`` until it holds; fail saying ``what`` did not happen."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g} s")
        time.sleep(0.02)


def process_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended and been reaped (or is a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"
