"""A backend for any language with a Jupyter kernel shipped in ``kernels/``.

Subclasses say which kernelspec to use and how to tell whether the language is
installed; everything else (routing, timeouts, restarts) is shared.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable

import anyio
from anyio.abc import TaskGroup
from jupyter_client.kernelspec import KernelSpecManager

from ...messages import Message
from ..base import Availability, ExecutionOptions, SessionSettings
from ..kernelspecs import kernels_dir
from ..turns import Turns, news_between_runs
from .execution import Execution
from .kernel import JupyterKernel

__all__ = ["JupyterBackend", "JupyterSession", "kernels_dir"]


class JupyterSession:
    """A persistent kernel for one language; one execution at a time."""

    def __init__(self, language: str, kernel: JupyterKernel) -> None:
        self.language = language
        self.kernel = kernel
        self._turns: Turns[Execution] = Turns(kernel.start_soon)

    def execute(self, code: str, options: ExecutionOptions) -> AsyncIterator[Message]:
        async def begin(free: Callable[[], None]) -> Execution:
            run = Execution(self.kernel, code, options)
            # The session is free again as soon as the kernel is done with this
            # request, even if the caller has not read (or never reads) the rest.
            run.on_finished = free
            return run

        return self._turns.take(lambda: self._news(options), begin)

    async def _news(self, options: ExecutionOptions) -> AsyncIterator[Message]:
        """A death since the last run and late output; returns once the kernel is settled."""
        while True:
            await self.kernel.ensure_ready()
            gone, self.kernel.unreported_death = self.kernel.unreported_death, None
            late, dropped = self.kernel.take_late()
            death = (gone.description, gone.exit_code) if gone is not None else None
            for message in news_between_runs(
                options.reply_to, death=death, late=late, dropped=dropped
            ):
                yield message
            # Checked, then the request is sent with no await in between: a request
            # can never slip into a restart after the death news went out to no one.
            if self.kernel.settled:
                return

    async def interrupt(self) -> None:
        await self._turns.interrupt()

    async def restart(self) -> None:
        await self.kernel.restart()

    async def aclose(self) -> None:
        await self.kernel.shutdown()


class JupyterBackend:
    """Starts :class:`JupyterSession` objects on the kernelspec ``kernel_name``."""

    name = "jupyter"
    aliases: tuple[str, ...] = ()
    kernel_name = ""
    #: Whether the kernel's startup code also publishes input requests on IOPub.
    announces_input = False

    def spec_manager(self) -> KernelSpecManager:
        """Where this backend's kernelspecs come from (the shipped ``kernels/``)."""
        return KernelSpecManager(kernel_dirs=[str(kernels_dir())])

    def availability(self) -> Availability:
        try:
            self.spec_manager().get_kernel_spec(self.kernel_name)
        except Exception as exc:
            return Availability.no(f"its kernelspec {self.kernel_name!r} is missing: {exc}")
        return Availability.yes()

    def kernel_env(self) -> dict[str, str]:
        """Extra environment variables for the kernel process."""
        return {}

    async def start(self, task_group: TaskGroup, settings: SessionSettings) -> JupyterSession:
        work_dir = settings.work_dir
        work_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.kernel_env(), **settings.env}
        kernel = JupyterKernel(
            self.spec_manager(),
            self.kernel_name,
            cwd=settings.cwd,
            work_dir=work_dir,
            shared_dir=settings.shared_dir,
            env=env,
            startup_timeout=settings.timeouts.startup,
            shutdown_timeout=settings.timeouts.shutdown,
            announces_input=self.announces_input,
            wrap_command=settings.command if settings.launcher is not None else None,
        )
        try:
            await kernel.start(task_group)
        except BaseException:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await kernel.shutdown()
            raise
        return JupyterSession(self.name, kernel)
