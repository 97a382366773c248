"""The ZMQ context a backend's kernels share (``backends/jupyter/contexts.py``):
made by the first kernel that takes it, ended by the last that gives it back
(its threads with it), and made anew for the next."""

from __future__ import annotations

import anyio

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
