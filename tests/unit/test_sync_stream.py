"""iterate_in_portal: a message stream pulled through the portal's event loop, one
step a message, as a sync caller reads it."""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator

import anyio
import pytest

from lmc_runtime import replies
from lmc_runtime.messages import Message
from lmc_runtime.sync import iterate_in_portal, start_portal

pytestmark = pytest.mark.timeout(30)


class _Stream:
    """A stream of two outputs and the final message, recording what ran where."""

    def __init__(self, *, block_after: int | None = None) -> None:
        self.closed_before_final_was_read = False
        self.closed = threading.Event()
        self.cancelled = threading.Event()
        self.block_after = block_after
        self.read_final = False

    async def messages(self) -> AsyncGenerator[Message, None]:
        try:
            for number in range(2):
                if number == self.block_after:
                    try:
                        await anyio.sleep_forever()
                    except anyio.get_cancelled_exc_class():
                        self.cancelled.set()
                        raise
                yield replies.output(f"{number}\n", "r1")
            yield replies.active_line(None, "r1")
        finally:
            self.closed_before_final_was_read = not self.read_final
            self.closed.set()


def test_the_stream_ends_in_the_step_of_its_final_message() -> None:
    """Guards the saved hop: the generator is closed in the loop as the final
    message is taken, before the caller has it, and every message arrives in order."""
    stream = _Stream()
    with start_portal() as portal:
        seen = []
        for message in iterate_in_portal(portal, stream.messages(), cancel_wait=5):
            if message.is_final:
                assert stream.closed.is_set()
                stream.read_final = True
            seen.append(message.content)
    assert seen == ["0\n", "1\n", None]
    assert stream.closed_before_final_was_read


def test_a_caller_that_stops_reading_closes_the_stream() -> None:
    """Guards the early exit: breaking out after the first message closes the
    generator in the loop (its ``finally`` runs) before the loop goes on."""
    stream = _Stream()
    with start_portal() as portal:
        for _ in iterate_in_portal(portal, stream.messages(), cancel_wait=5):
            break
        assert stream.closed.wait(5)


def test_an_interrupted_caller_cancels_the_step_in_the_loop() -> None:
    """Guards Ctrl-C: the interruption cut into the caller's wait cancels the
    pending step in the event loop (which would stop the code), then propagates."""
    stream = _Stream(block_after=1)
    with start_portal() as portal:
        iterator = iterate_in_portal(portal, stream.messages(), cancel_wait=5)
        assert next(iterator).content == "0\n"
        with pytest.raises(KeyboardInterrupt):
            _next_interrupted(iterator)
        assert stream.cancelled.wait(5)
        assert stream.closed.wait(5)


def _next_interrupted(iterator: object) -> None:
    """``next(iterator)``, cut by a KeyboardInterrupt raised in this thread while it
    waits (as a signal would raise it)."""
    import ctypes

    target = threading.get_ident()

    def interrupt() -> None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(target), ctypes.py_object(KeyboardInterrupt)
        )

    timer = threading.Timer(0.3, interrupt)
    timer.start()
    try:
        next(iterator)  # type: ignore[call-overload]
    finally:
        timer.cancel()


def test_a_portal_closed_between_two_messages_gives_the_closed_notice() -> None:
    """Guards the close race: the loop gone before the next step, the caller gets the
    closed notice and the final message, not an error."""
    stream = _Stream()
    with start_portal() as portal:
        iterator = iterate_in_portal(portal, stream.messages(), cancel_wait=5)
        assert next(iterator).content == "0\n"
    rest = list(iterator)
    assert [m.format for m in rest] == ["output", "active_line"]
    assert rest[-1].is_final and (rest[-1].extras or {}).get("state_lost")


def test_a_stream_read_from_the_loop_s_own_thread_never_waits_for_itself() -> None:
    """Guards the fallback: read in the portal's own thread, where no step could run
    while the reader waited, the stream ends at once (a task of the portal refuses
    to start there) instead of hanging the loop for good."""
    stream = _Stream()
    with start_portal() as portal:
        messages = portal.call(
            lambda: list(iterate_in_portal(portal, stream.messages(), cancel_wait=5))
        )
    assert messages == []
