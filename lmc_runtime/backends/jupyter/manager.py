"""The kernel manager of a :class:`~.kernel.JupyterKernel`, and its unix sockets.

Under a sandbox the kernel binds its sockets in a folder it can write
(``shared``); the host renames them into its own folder (a rename never
follows a link), checks each is a socket, and only then connects, by a path
the sandbox cannot change. Placeholders keep the sockets' inodes for the next
launch, so a kernel still starts on a disk the code has filled.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from jupyter_client.manager import AsyncKernelManager

from ...errors import KernelStartError
from ..hostfs import HostDir
from .process import wait_for_exit

__all__ = ["Manager", "adopt_sockets", "reserve_sockets"]


class Manager(AsyncKernelManager):
    """A kernel manager whose kernel command line goes through a launcher.

    With ``host_ip`` set, the kernel binds its unix sockets at ``ip`` (in a
    folder it can write) while the host connects to ``host_ip`` (a folder only
    the host writes), where :func:`adopt_sockets` moves them.
    """

    wrap_command: Callable[[Sequence[str]], list[str]] | None = None
    host_ip: str | None = None

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        argv = super().format_kernel_cmd(extra_arguments)
        return self.wrap_command(argv) if self.wrap_command is not None else argv

    def _make_url(self, channel: str) -> str:
        if self.host_ip is None:
            return str(super()._make_url(channel))
        return f"{self.transport}://{self.host_ip}-{getattr(self, f'{channel}_port')}"

    def socket_names(self) -> list[str]:
        """The file names of the kernel's five unix sockets."""
        base = os.path.basename(self.ip)
        ports = ("shell", "iopub", "stdin", "control", "hb")
        return [f"{base}-{getattr(self, f'{name}_port')}" for name in ports]


async def adopt_sockets(
    km: Manager,
    shared: Path,
    own: Path,
    process: Any,
    timeout: float,
    log_tail: Callable[[], str],
) -> None:
    """Wait for the kernel (``process``) to bind its sockets in ``shared``, then
    move them into ``own``; KernelStartError if it ends first or takes too long."""
    names = km.socket_names()
    bound = False
    with HostDir(shared) as shared_dir, HostDir(own) as own_dir:
        async with anyio.create_task_group() as tg:

            async def died() -> None:
                await wait_for_exit(process.pid, lambda: process.poll() is None)
                tg.cancel_scope.cancel()

            tg.start_soon(died)
            try:
                await shared_dir.wait_for(names, timeout)
                bound = True
            except TimeoutError:
                pass
            tg.cancel_scope.cancel()
        if not bound:
            tail = log_tail()
            raise KernelStartError(
                f"the kernel ended or did not open its sockets within {timeout:g} s"
                + (f": {tail}" if tail else "")
            )
        try:
            for name in names:
                shared_dir.adopt_socket(name, own_dir)
        except OSError as exc:
            raise KernelStartError(f"the kernel's sockets are not usable: {exc}") from exc
    reserve_sockets(km, shared)


def reserve_sockets(km: Manager, shared: Path) -> None:
    """Placeholders at the socket paths for the next launch (see HostDir.reserve)."""
    with HostDir(shared) as folder:
        for name in km.socket_names():
            folder.reserve(name)
