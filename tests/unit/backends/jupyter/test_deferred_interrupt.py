"""An interrupt asked before a Jupyter run's code could take it is sent once it can,
however late the ladder's :meth:`insist` looks (fakes: no kernel)."""

from __future__ import annotations

import signal
from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest

from lmc_runtime.backends.base import ExecutionOptions
from lmc_runtime.backends.core import Finished, Supervisor
from lmc_runtime.backends.jupyter.execution import JupyterExecution, KernelRoute
from lmc_runtime.replies import Status

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Kernel:
    def __init__(self) -> None:
        self.signals: list[int] = []
        self.signalled = anyio.Event()

    async def send_signal(self, signum: int) -> None:
        self.signals.append(signum)
        self.signalled.set()


def _execution() -> tuple[JupyterExecution, KernelRoute, _Kernel]:
    kernel = _Kernel()
    supervisor = cast(Supervisor, SimpleNamespace(current=kernel, who="the kernel"))
    route = KernelRoute("run-1", "m1")
    return JupyterExecution(supervisor, route, ExecutionOptions(reply_to="m1")), route, kernel


async def _insist_until_sent(execution: JupyterExecution, route: KernelRoute, kernel: Any) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(execution.insist)
        with anyio.move_on_after(5):  # bounded: the old code never sends it
            await kernel.signalled.wait()
        await route.put(Finished(Status.INTERRUPTED))
        tg.cancel_scope.cancel()


async def test_regression_an_interrupt_deferred_then_looked_at_after_the_code_began_is_sent() -> (
    None
):
    """Regression (CI, a busy host): the caller left the moment it sent the run, so the
    interrupt waited for the code's start; the code announced it before the ladder's
    ``insist`` first looked, which then took the interrupt as sent and only waited:
    the code slept on and the kernel was restarted, its state lost."""
    execution, route, kernel = _execution()
    await execution.interrupt_code()
    assert kernel.signals == []  # the code cannot take it yet
    route.reached["begun"].set()
    route.reached["evaluating"].set()
    await _insist_until_sent(execution, route, kernel)
    assert kernel.signals == [signal.SIGINT]


async def test_an_interrupt_asked_once_the_code_runs_is_sent_once() -> None:
    execution, route, kernel = _execution()
    route.reached["begun"].set()
    route.reached["evaluating"].set()
    await execution.interrupt_code()
    assert kernel.signals == [signal.SIGINT]
    async with anyio.create_task_group() as tg:
        tg.start_soon(execution.insist)
        await anyio.wait_all_tasks_blocked()
        await route.put(Finished(Status.INTERRUPTED))
    assert kernel.signals == [signal.SIGINT]
