"""The in-process ``Computer`` given fuzzed messages: ``run`` with dicts, ``arun``
with ``Message`` objects (and dicts where no ``Message`` can hold the input).

Each example is a batch of inputs; after it the computer still runs ``print(1)``
and no process was left behind under this one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given
from hypothesis import strategies as st

from lmc_runtime import Computer, Message, Timeouts
from lmc_runtime.errors import MessageError
from lmc_runtime.messages import parse_message

from .checks import Tally, check_replies, descendants, fuzz_settings, new_processes, servers
from .strategies import SAFE_CODE, Case, cases

pytestmark = pytest.mark.integration

TIMEOUTS = Timeouts(execution=30)


def _warm(run: Any) -> None:
    """Start every language the cases run, so their kernels are there before."""
    for language in SAFE_CODE:
        assert list(run(language, "1"))[-1].status in ("ok", "error")


@pytest.fixture(scope="module")
def computer() -> Iterator[Computer]:
    with Computer(timeouts=TIMEOUTS) as opened:
        _warm(opened.run)
        yield opened


@pytest.fixture(scope="module")
def portal_computer() -> Iterator[tuple[BlockingPortal, Computer]]:
    """A Computer opened with ``async with`` in a portal's event loop, for ``arun``."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Computer(timeouts=TIMEOUTS)) as opened,
    ):
        yield portal, opened


def _as_message(value: Any) -> Any:
    """The case as a ``Message`` when one holds it, else the dict itself."""
    try:
        return parse_message(value)
    except MessageError:
        return value


def _still_fine(replies: list[Message]) -> None:
    # Output may come in more than one chunk ("1", then "\n").
    assert "".join(m.content for m in replies if m.format == "output") == "1\n", replies
    assert replies[-1].is_final and replies[-1].status == "ok", replies[-1]


@fuzz_settings(20)
@given(batch=st.lists(cases(), min_size=1, max_size=5))
def test_run_answers_every_message_with_a_final_reply_or_a_refusal(
    computer: Computer, batch: list[Case]
) -> None:
    tally = Tally("Computer.run")
    before = descendants(os.getpid())
    apart = servers(before)  # other tests' servers, whose pools may start processes
    for case in batch:
        with tally.trying(case.label, case.value):
            check_replies(list(computer.run(case.value)), case)
    with tally.trying("health", "print(1) after the batch"):
        _still_fine(list(computer.run("python", "print(1)")))
        assert not new_processes(before, os.getpid(), apart), "processes left behind"


async def _collect(computer: Computer, value: Any) -> list[Message]:
    return [reply async for reply in computer.arun(value)]


@fuzz_settings(15)
@given(batch=st.lists(cases(), min_size=1, max_size=5))
def test_arun_answers_every_message_object_with_a_final_reply_or_a_refusal(
    portal_computer: tuple[BlockingPortal, Computer], batch: list[Case]
) -> None:
    portal, computer = portal_computer
    tally = Tally("Computer.arun")
    for case in batch:
        with tally.trying(case.label, case.value):
            check_replies(portal.call(_collect, computer, _as_message(case.value)), case)
    with tally.trying("health", "print(1) after the batch"):
        _still_fine(portal.call(_collect, computer, {**_PRINT}))


_PRINT = {"role": "assistant", "type": "code", "format": "python", "content": "print(1)"}
