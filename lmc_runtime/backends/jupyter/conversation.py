"""The messaging side of one kernel, wherever its messages travel (local sockets or a
gateway's WebSocket): readiness probes, each message handed to its run, and runs' ends.

A kernel is ready once a ``kernel_info_request`` is answered on shell and IOPub
(IOPub drops what is published before it is connected, so a probe is repeated,
less and less often). A kernel that answers probes on IOPub but never on shell
for :data:`STALL` seconds has a stuck reply path: the probing stops, and the
caller gives that kernel up (see :class:`~lmc_runtime.errors.KernelStalled`).
Every other message goes to the run whose ``execute_request`` it answers (a
route's key is that request's ``msg_id``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ..core import Deliver
from ..core.turns import first_of
from .items import RunEnds, asks_exit, to_item

__all__ = ["STALL", "Conversation", "Send"]

#: How long probes may be answered on IOPub only before the kernel counts as stalled.
STALL = 10.0

#: Sends a shell request: ``send(msg_type, content, metadata)`` returns its ``msg_id``.
Send = Callable[[str, dict[str, Any], dict[str, Any]], str]


class Conversation:
    """Hands a kernel's messages on: probes' answers to readiness, the rest to runs.

    ``answer`` replies to an input request; ``announces_input``: the kernel's
    startup code publishes input requests on IOPub too; ``exit_asked`` is awaited
    when a run's reply carries the code's ``exit()``.
    """

    def __init__(
        self,
        deliver: Deliver,
        answer: Callable[[str], None],
        exit_asked: Callable[[], Awaitable[None]],
        *,
        announces_input: bool,
    ) -> None:
        self._deliver, self._answer, self._exit_asked = deliver, answer, exit_asked
        self._announces_input = announces_input
        self._probes: dict[str, set[str]] = {}
        self.answered = anyio.Event()
        #: Every probe sent so far has its shell reply: none is still queued in the kernel.
        self.probes_replied = anyio.Event()
        self._ends = RunEnds()
        #: When IOPub first answered a probe while shell had answered none.
        self._iopub_only_since: float | None = None

    async def probe(
        self,
        send: Send,
        ended: anyio.Event,
        timeout: float,
        nudge: Callable[[], None] = lambda: None,
    ) -> None:
        """Probe until shell and IOPub answer, ``ended`` is set, the kernel stalls
        or ``timeout`` passes. ``nudge`` is called between probes: it makes the
        client's sockets look again for what they hold."""
        attempt = 0.1
        with anyio.move_on_after(timeout):
            while not (self.answered.is_set() or ended.is_set() or self.stalled):
                self._probes[send("kernel_info_request", {}, {})] = set()
                with anyio.move_on_after(attempt):
                    await first_of(self.answered, ended)
                nudge()
                attempt = min(attempt * 2, 1.0)

    @property
    def stalled(self) -> bool:
        """IOPub has answered probes for :data:`STALL` seconds, and shell never did."""
        since = self._iopub_only_since
        return since is not None and anyio.current_time() - since >= STALL

    def unanswered(self) -> str:
        """What the probes heard, for the error of a kernel that never became ready."""
        heard = {channel for seen in self._probes.values() for channel in seen}
        said = f"it answered on {' and '.join(sorted(heard))} only" if heard else "no answer"
        return f"{len(self._probes)} kernel_info probes, {said}"

    def _note_iopub_only(self, channel: str) -> None:
        if channel == "shell":
            self._iopub_only_since = None
        elif self._iopub_only_since is None and not any(
            "shell" in seen for seen in self._probes.values()
        ):
            self._iopub_only_since = anyio.current_time()

    def needed(self, channel: str, msg: dict[str, Any]) -> bool:
        """Whether ``msg`` (header only) matters: all does but IOPub's news of a run
        that has ended, other than output (late output is kept for the next run)."""
        if channel != "iopub" or msg["msg_type"] == "stream":
            return True
        return not self._ends.over(str((msg.get("parent_header") or {}).get("msg_id", "")))

    async def dispatch(self, channel: str, msg: dict[str, Any]) -> None:
        """Hand ``msg`` (from ``channel``) to whoever waits for it."""
        parent = str((msg.get("parent_header") or {}).get("msg_id", ""))
        probe = self._probes.get(parent)
        if probe is not None:
            probe.add(channel)
            self._note_iopub_only(channel)
            if {"shell", "iopub"} <= probe:
                self.answered.set()
            if all("shell" in each for each in self._probes.values()):
                self.probes_replied.set()
            return
        item = to_item(channel, msg, self._answer, self._announces_input)
        if item is not None:
            await self._deliver(item, parent)
        reply = self._ends.see(channel, msg, parent)
        if reply is None:
            return
        if asks_exit(reply):
            await self._exit_asked()  # the kernel ends, and the run with it
        else:
            await self._deliver(self._ends.finished(reply), parent)
