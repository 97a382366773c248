"""The launch seam: one process tree of a backend (a provisioner plus its event source)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from anyio.abc import TaskGroup

from ..base import ExecutionOptions
from .items import Gone
from .route import Route

__all__ = ["Deliver", "Interpreter", "InterpreterFactory"]

#: Hands an item to the run it belongs to: ``deliver(item, key)``; a key of
#: None means "the open run" (or late output, if none is open).
Deliver = Callable[[Any, object], Awaitable[None]]


@runtime_checkable
class Interpreter(Protocol):
    """One process tree of a backend: what it must *do*.

    - :meth:`launch` starts the tree and its readers (in ``task_group``) and
      returns once the interpreter takes code. If the process ends or does not
      become ready within the startup timeout, it kills what it started and
      raises :class:`~lmc_runtime.errors.KernelStartError` with what the process
      last said.
    - Its readers hand every event to ``deliver`` the moment it is readable,
      without polling: output as :class:`~.items.Output`, the running line as
      :class:`~.items.Line`, the end of a run as :class:`~.items.Finished`, and
      backend-specific items the backend's execution understands. Output of
      one stream comes in order with the run's end.
    - :meth:`submit` sends code as one run, on ``route`` (whose ``key`` tells
      that run's events from a stale one's).
    - :meth:`send_signal` signals the whole tree (SIGINT is the interrupt).
    - :meth:`wait` returns once the process has ended *and* its output has been
      delivered, with how it ended; it is called once, after :meth:`launch`.
    - :meth:`kill` ends the tree (every process it started, even those that
      left its group), reaps it and closes its descriptors; idempotent.
    """

    async def launch(self, task_group: TaskGroup, deliver: Deliver) -> None: ...

    async def submit(self, code: str, options: ExecutionOptions, route: Route) -> None: ...

    async def send_signal(self, signum: int) -> None: ...

    async def wait(self) -> Gone: ...

    async def kill(self) -> None: ...


#: Makes a fresh interpreter for each launch.
InterpreterFactory = Callable[[], Interpreter]
