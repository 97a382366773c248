"""An interrupt of a Python run is followed by wake-ups (SIGURG, which the kernel
handles by doing nothing) until the run ends; other kernels get none (fakes)."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import cast

import anyio
import anyio.abc
import pytest

from lmc_runtime.backends.base import ExecutionOptions
from lmc_runtime.backends.core import Finished, Supervisor
from lmc_runtime.backends.jupyter.execution import (
    WAKES,
    JupyterExecution,
    KernelRoute,
    PythonExecution,
)
from lmc_runtime.backends.jupyter.interpreter import JupyterInterpreter
from lmc_runtime.replies import Status

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Signals:
    def __init__(self, wanted: int) -> None:
        self.signals: list[int] = []
        self._wanted = wanted
        self.enough = anyio.Event()

    async def send_signal(self, signum: int) -> None:
        self.signals.append(signum)
        if len(self.signals) >= self._wanted:
            self.enough.set()


class _LocalKernel(_Signals, JupyterInterpreter):
    """A local kernel's interpreter with no kernel behind it: it records signals."""


class _Run:
    """A running run on ``kernel``, its interrupt asked twice; :attr:`started`: the
    background tasks it started, :attr:`returned`: set as the last one returns."""

    def __init__(self, execution_type: type[JupyterExecution], kernel: _Signals) -> None:
        self.kernel = kernel
        self.route = KernelRoute("run-1", "m1")
        self.route.reached["begun"].set()
        self.route.reached["evaluating"].set()
        self.started = 0
        self.returned = anyio.Event()
        self._type = execution_type

    async def interrupt(self, tg: anyio.abc.TaskGroup) -> None:
        def start_soon(func: Callable[[], Awaitable[None]]) -> None:
            async def run() -> None:
                await func()
                self.returned.set()

            self.started += 1
            tg.start_soon(run)

        supervisor = SimpleNamespace(current=self.kernel, who="the kernel", start_soon=start_soon)
        options = ExecutionOptions(reply_to="m1")
        execution = self._type(cast(Supervisor, supervisor), self.route, options)
        await execution.interrupt_code()
        await execution.interrupt_code()  # asked twice: woken once

    async def end(self) -> None:
        await self.route.put(Finished(Status.INTERRUPTED))


async def test_a_python_interrupt_is_followed_by_wake_ups_until_the_run_ends() -> None:
    run = _Run(PythonExecution, _LocalKernel(wanted=4))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await run.interrupt(tg)
            await run.kernel.enough.wait()
            await run.end()
            await run.returned.wait()
    # Two interrupts, then a wake-up after each of the first pauses; none after the end.
    assert run.kernel.signals == [signal.SIGINT, signal.SIGINT, signal.SIGURG, signal.SIGURG]
    assert run.started == 1 and len(WAKES) > 2


async def test_a_run_that_ends_at_its_interrupt_is_not_woken() -> None:
    run = _Run(PythonExecution, _LocalKernel(wanted=2))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await run.interrupt(tg)
            await run.end()
            await run.returned.wait()
    assert run.kernel.signals == [signal.SIGINT, signal.SIGINT]


async def test_a_gateways_kernel_is_not_woken() -> None:
    """A gateway takes SIGINT only: the wake-ups end before the run does."""
    run = _Run(PythonExecution, _Signals(wanted=2))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await run.interrupt(tg)
            await run.returned.wait()  # the old code would wake it until the run ended
            await run.end()
    assert run.kernel.signals == [signal.SIGINT, signal.SIGINT]


async def test_a_kernel_without_the_handler_is_not_woken() -> None:
    run = _Run(JupyterExecution, _LocalKernel(wanted=2))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await run.interrupt(tg)
            await run.end()
    assert run.started == 0
    assert run.kernel.signals == [signal.SIGINT, signal.SIGINT]
