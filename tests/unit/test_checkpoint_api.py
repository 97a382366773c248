"""The Computer's checkpoint methods on a backend without checkpoints (the scripted
fake), the final message's ``extras.checkpoint``, and the memory figure's parser."""

from __future__ import annotations

import os
from typing import Any

import anyio
import pytest

from lmc_runtime import Computer
from lmc_runtime.backends import BackendEntry, Registry
from lmc_runtime.backends.checkpoints import private_bytes
from lmc_runtime.branching import mark_checkpoint
from lmc_runtime.errors import (
    ArgumentValueError,
    CheckpointNotFound,
    CheckpointsUnsupported,
    UsageError,
)
from lmc_runtime.messages import Message

from ..fakes import ScriptedBackend


def make(**kwargs: Any) -> Computer:
    registry = Registry([])
    registry.add(BackendEntry("fake", "tests.fakes:ScriptedBackend", ()), ScriptedBackend())
    return Computer(registry=registry, **kwargs)


def test_a_language_without_checkpoints_says_so_by_name() -> None:
    with make() as computer:
        for call in (computer.checkpoint, computer.fork):
            with pytest.raises(CheckpointsUnsupported, match="not supported for fake"):
                call("fake")
        with pytest.raises(UsageError, match="unknown language"):
            computer.checkpoint("cobol")
        with pytest.raises(CheckpointNotFound):
            computer.rollback("nothing")
        with pytest.raises(CheckpointNotFound):
            computer.drop_checkpoint("nothing")
        assert computer.checkpoints() == []


def test_every_run_leaves_runs_of_such_a_language_as_they_are() -> None:
    with make(checkpoints="every_run", keep=3) as computer:
        messages = list(computer.run("fake", "print a"))
    assert [m.content for m in messages] == ["a\n", None]
    assert all("checkpoint" not in (m.extras or {}) for m in messages)


@pytest.mark.parametrize(("mode", "keep"), [("always", 1), ("every_run", 0)])
def test_checkpoint_options_are_checked_at_once(mode: str, keep: int) -> None:
    with pytest.raises(ArgumentValueError):
        make(checkpoints=mode, keep=keep)


def test_only_the_final_message_carries_the_checkpoint() -> None:
    output = Message.computer("console", "output", "hi\n", in_reply_to="r")
    line = Message.computer("console", "active_line", None, in_reply_to="r")
    final = Message.computer(
        "console", "active_line", None, in_reply_to="r", extras={"status": "ok"}
    )

    async def marked(checkpoint: str | None) -> list[Message]:
        async def stream() -> Any:
            for message in (output, line, final):
                yield message

        return [m async for m in mark_checkpoint(stream(), checkpoint)]

    seen = anyio.run(marked, "c1")
    assert [(m.extras or {}).get("checkpoint") for m in seen] == [None, None, "c1"]
    assert seen[2].extras == {"status": "ok", "checkpoint": "c1"}
    assert anyio.run(marked, None) == [output, line, final]


def test_marking_a_run_closes_its_messages_when_closed_early() -> None:
    """Regression: a caller that stopped at the final message (the sandbox's
    guard) left the run's messages open for the garbage collector, whose
    finalizer costs a task and a wakeup of the loop every run."""
    closed: list[bool] = []

    async def stream():  # type: ignore[no-untyped-def]
        try:
            yield Message(role="computer", type="console", format="output", content="1\n")
            yield Message(role="computer", type="console", format="output", content="2\n")
        finally:
            closed.append(True)

    async def first() -> list[bool]:
        marked = mark_checkpoint(stream(), "c1")
        async for _ in marked:
            break
        await marked.aclose()
        return list(closed)  # closed by then, not later by the loop's finalizer

    assert anyio.run(first) == [True]


def test_private_bytes_sums_the_private_lines_of_smaps_rollup() -> None:
    own = private_bytes(os.getpid())
    assert own > 0 and own % 1024 == 0
    assert private_bytes(2**22 + 1) == 0  # no such process
