"""The ZMQ contexts a backend's kernels share (``backends/jupyter/contexts.py``):
each made by the first kernel that takes it, ended by the last that gives it
back (its threads with it), made anew for the next, and holding a bounded
number of kernels."""

from __future__ import annotations

import anyio
import pytest
import zmq

from lmc_runtime.backends.jupyter import contexts
from lmc_runtime.backends.jupyter.contexts import SharedContext


def test_kernels_share_one_context_which_the_last_ends() -> None:
    async def scenario() -> None:
        shared = SharedContext()
        first, second = shared.take(), shared.take()
        assert first is second and shared.users == 2
        socket = first.socket(0x5)  # DEALER: the context's I/O thread starts
        socket.close(linger=0)
        await shared.give_back(first)
        assert not first.closed and shared.users == 1
        await shared.give_back(second)
        assert first.closed and shared.users == 0
        third = shared.take()
        assert third is not first and not third.closed
        await shared.give_back(third)
        assert third.closed

    anyio.run(scenario)


def test_a_context_given_back_after_its_end_is_not_ended_twice() -> None:
    """Guards the count: a holder of an ended context gives back nothing of the
    next one's."""

    async def scenario() -> None:
        shared = SharedContext()
        old = shared.take()
        await shared.give_back(old)
        new = shared.take()
        await shared.give_back(old)
        assert shared.users == 1 and not new.closed
        await shared.give_back(new)
        assert new.closed

    anyio.run(scenario)


def test_a_full_context_sends_the_next_kernel_to_a_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: one context for every kernel of a server ran out of ZMQ's 1,023
    sockets at some 55 kernels ("Too many open files"). A context takes
    :data:`KERNELS_PER_CONTEXT` kernels, and room for their sockets."""
    monkeypatch.setattr(contexts, "KERNELS_PER_CONTEXT", 2)

    async def scenario() -> None:
        shared = SharedContext()
        held = [shared.take() for _ in range(5)]
        assert [id(c) for c in held[:2]] == [id(held[0])] * 2
        assert held[2] is held[3] and held[2] is not held[0] and held[4] not in held[:4]
        assert shared.contexts == 3 and shared.users == 5
        assert held[0].get(zmq.MAX_SOCKETS) == contexts.SOCKETS
        await shared.give_back(held[0])
        assert shared.take() is held[0]  # the room it left
        for context in [*held, held[0]]:
            await shared.give_back(context)
        assert shared.contexts == 0 and all(c.closed for c in held)

    anyio.run(scenario)


def test_a_context_has_room_for_the_sockets_of_its_kernels() -> None:
    """A kernel holds some 18 of its context's sockets (its channels, their
    monitors, the manager's control socket)."""
    assert contexts.KERNELS_PER_CONTEXT * 18 <= contexts.SOCKETS
