"""The kernel manager, on unix sockets, and their adoption under a sandbox.

Under a sandbox the kernel binds its sockets in a folder it can write
(``shared``); the host renames them into its own folder (a rename never follows
a link), checks each is a socket, and only then connects. Placeholders keep
the sockets' inodes for the next launch, so a kernel starts on a full disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from jupyter_client.manager import AsyncKernelManager, KernelManager, in_pending_state

from ...errors import KernelStartError
from ...hostfs import HostDir

__all__ = ["PORTS", "Manager", "adopt_sockets", "reserve_sockets"]

#: The channels' fixed "ports" (suffixes of the socket files), the same on every launch.
PORTS = {"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5}


class Manager(AsyncKernelManager):  # type: ignore[misc]
    """A kernel manager on unix sockets at ``ip``-1 ... ``ip``-5, as the kernel sees
    them (in a sandbox, the connection file it reads names its own paths); on the
    host they are at ``bound_ip``-N, and with ``host_ip`` set, the host connects
    there instead (where :func:`adopt_sockets` moves them)."""

    host_ip: str | None = None
    bound_ip: str | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(transport="ipc", **PORTS, **kwargs)

    async def start_kernel(self, **kw: Any) -> None:  # type: ignore[override]
        await _without_pause(self, KernelManager._async_start_kernel, **kw)

    async def _async_post_start_kernel(self, **kw: Any) -> None:
        """jupyter_client's, less its control socket, connected at every start: the
        runtime interrupts by signal and shuts a kernel down ``now`` (a kill), so
        it never sends on it (a graceful shutdown request would connect it then)."""
        self.start_restarter()
        assert self.provisioner is not None
        await self.provisioner.post_launch(**kw)

    async def shutdown_kernel(  # type: ignore[override]
        self, now: bool = False, restart: bool = False
    ) -> None:
        await _without_pause(self, KernelManager._async_shutdown_kernel, now=now, restart=restart)

    def _make_url(self, channel: str) -> str:
        if self.host_ip is None:
            return str(super()._make_url(channel))
        return f"{self.transport}://{self.host_ip}-{getattr(self, f'{channel}_port')}"

    def cleanup_ipc_files(self) -> None:
        """Remove the socket files where the kernel bound them, on the host."""
        if self.bound_ip is None:
            super().cleanup_ipc_files()
            return
        for port in PORTS.values():
            with contextlib.suppress(OSError):
                os.remove(f"{self.bound_ip}-{port}")

    def socket_names(self) -> list[str]:
        """The socket files the kernel binds: its heartbeat's too, unless its
        kernel spec says it has none (``"metadata": {"lmc": {"heartbeat": false}}``:
        the runtime never pings it; its channels start without one)."""
        base = os.path.basename(self.ip)
        lmc = self.kernel_spec.metadata.get("lmc") if self.kernel_spec is not None else None
        beats = not isinstance(lmc, dict) or lmc.get("heartbeat", True) is not False
        return [f"{base}-{port}" for name, port in PORTS.items() if beats or name != "hb_port"]


async def _without_pause(km: Manager, method: Any, **kw: Any) -> None:
    """``method`` (one of jupyter_client's ``in_pending_state`` methods) as that
    decorator runs it, less the 10 ms sleep it adds for jupyter_client's own tests:
    a start and a shutdown each paid it, and a rollback pays both."""
    inner = getattr(method, "__wrapped__", None)
    if inner is None or not callable(in_pending_state):
        await method(km, **kw)
        return
    if km._attempted_start or not km._ready:
        km._ready = asyncio.get_running_loop().create_future()
    try:
        await inner(km, **kw)
    except Exception as exc:
        if not km._ready.done():
            km._ready.set_exception(exc)
            km._ready.exception()  # retrieved: the caller gets it raised
        raise
    if km.owns_kernel and not km._ready.done():
        km._ready.set_result(None)


async def adopt_sockets(
    km: Manager,
    shared: Path,
    own: Path,
    ended: Callable[[], Awaitable[object]],
    timeout: float,
    log_tail: Callable[[], str],
) -> None:
    """Wait for the kernel to bind its sockets in ``shared``, then move them into
    ``own``; KernelStartError if it ends (``ended`` returns) first or takes too long."""
    names = km.socket_names()
    bound = False
    with HostDir(shared) as shared_dir, HostDir(own) as own_dir:
        async with anyio.create_task_group() as tg:

            async def died() -> None:
                await ended()
                tg.cancel_scope.cancel()

            tg.start_soon(died)
            with contextlib.suppress(TimeoutError):
                await shared_dir.wait_for(names, timeout)
                bound = True
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
