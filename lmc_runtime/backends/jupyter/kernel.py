"""What a local kernel and a gateway's kernel do alike as interpreters.

:class:`KernelInterpreter` holds the part that does not depend on where the
kernel runs: the conversation that hands its messages to runs and answers
input requests, the readers :meth:`~KernelInterpreter.kill` stops (even before
they started), and how the kernel's end is told (an ``exit()`` of the code
wins over whatever else ended it). :func:`execute_request` is the request that
starts a run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

import anyio

from ..base import ExecutionOptions
from ..core import Deliver, Gone
from .conversation import Conversation

__all__ = ["KernelInterpreter", "execute_request"]


class _Channels(Protocol):
    def send_input(self, value: str) -> None: ...


C = TypeVar("C", bound=_Channels)


def execute_request(code: str, options: ExecutionOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """The content and metadata of the ``execute_request`` that runs ``code``."""
    content = {
        "code": code,
        "silent": options.hidden,
        "store_history": not options.hidden,
        "user_expressions": {},
        "allow_stdin": options.on_input is not None,
        "stop_on_error": True,
    }
    metadata: dict[str, Any] = {"lmc_active_line": options.track_lines}
    if options.env:  # set by the kernel's startup code for this run only
        metadata["lmc_env"] = dict(options.env)
    return content, metadata


class KernelInterpreter(ABC, Generic[C]):
    """The shared state of a kernel interpreter whose messages travel on channels ``C``.

    ``announces_input``: the kernel's startup code publishes input requests on
    IOPub too. A subclass sets ``_channels`` once connected, starts its readers
    with :meth:`_guarded`, calls :meth:`_end` when the kernel is gone and says
    in :meth:`_exit_asked` how the code's ``exit()`` ends the kernel.
    """

    def __init__(self, *, announces_input: bool) -> None:
        self._announces_input = announces_input
        self._channels: C | None = None
        self._conversation: Conversation | None = None
        self._deliver: Deliver | None = None
        self._scopes: list[anyio.CancelScope] = []
        self._ended = anyio.Event()
        self._gone: Gone | None = None
        self._killed = self._exiting = False

    async def wait(self) -> Gone:
        await self._ended.wait()
        assert self._gone is not None
        return self._gone

    def _converse(self, deliver: Deliver) -> Conversation:
        """A new conversation delivering to ``deliver``, kept for the kernel's messages."""
        self._deliver = deliver
        self._conversation = Conversation(
            deliver, self._send_input, self._exit_asked, announces_input=self._announces_input
        )
        return self._conversation

    def _stop_readers(self) -> None:
        """Stop every reader :meth:`_guarded` runs, and any it is yet to start."""
        self._killed = True
        for scope in self._scopes:
            scope.cancel()

    async def _guarded(self, func: Callable[[], Awaitable[None]]) -> None:
        """Run ``func`` until it returns or :meth:`_stop_readers` stops it, even before it ran."""
        with anyio.CancelScope() as scope:
            self._scopes.append(scope)
            if self._killed:
                scope.cancel()
            await func()

    def _end(self, gone: Gone) -> None:
        """The kernel is gone: as ``gone`` says, unless the code asked it to exit."""
        self._gone = Gone.exited("asked the kernel to exit", None) if self._exiting else gone
        self._ended.set()

    @abstractmethod
    async def _exit_asked(self) -> None:
        """The code called ``exit()``: end the kernel, and the run with it."""

    def _send_input(self, value: str) -> None:
        if self._channels is not None:
            self._channels.send_input(value)
