"""The kernel provisioner of the shipped kernelspecs (``lmc-provisioner`` in
``kernel.json``): the kernel's command line through the session's launcher, in a
session and process group of its own; :meth:`LmcProvisioner.wait` waits on a pidfd.
A launcher that can fork the command line (:class:`~..base.ForkingLauncher`)
is asked to first.

A kernel started here is held by the session's lifeline (the launch keyword
``lifeline``) from its start until it is reaped. A kernelspec whose metadata
says ``"lmc_private_tmp": true`` (R's) gets a ``TMPDIR`` of its own in the
session's folder when no launcher wraps it, removed once the kernel has
ended: R leaves its ``Rtmp`` folder behind whenever it is killed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import anyio
from jupyter_client.provisioning.provisioner_base import KernelProvisionerBase

from ...lifeline import Lifeline, await_exit
from ...procs import end_session, signal_group
from ...removal import remove_tree
from ..base import EndsAsync, KernelProcess

__all__ = ["PROVISIONER_NAME", "LmcProvisioner"]

PROVISIONER_NAME = "lmc-provisioner"


class LmcProvisioner(KernelProvisionerBase):  # type: ignore[misc]
    """A kernel process in its own session; the launch keyword ``wrap_command``
    turns its command line into the one to run (``stdout``/``stderr`` as for Popen),
    and ``fork_command``, if given, may start it instead (see the module)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.process: KernelProcess | None = None
        self._fork: Any = None
        self._argv: list[str] = []
        self.pid = 0
        self.exit_code: int | None = None
        self._lifeline: Lifeline | None = None
        self._tmp: Path | None = None

    @property
    def has_process(self) -> bool:
        return self.process is not None

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        """Write the connection file and build the command line, through the launcher."""
        manager = self.parent
        assert manager is not None, "a provisioner is made by its kernel manager"
        extra = kwargs.pop("extra_arguments", [])
        wrap = kwargs.pop("wrap_command", None)
        self._fork = kwargs.pop("fork_command", None)
        self._lifeline = kwargs.pop("lifeline", None)
        manager.write_connection_file()
        # The kernel may run as another user (the sandbox's); only the host writes the folder.
        os.chmod(manager.connection_file, 0o644)
        self.connection_info = manager.get_connection_info()
        cmd = manager.format_kernel_cmd(extra_arguments=extra)
        self._argv = list(cmd)
        if wrap is not None:
            cmd = wrap(cmd)
        elif self._fork is None and self.kernel_spec.metadata.get("lmc_private_tmp"):
            folder = os.path.dirname(manager.connection_file)
            self._tmp = Path(tempfile.mkdtemp(prefix="tmp-", dir=folder))
            kwargs["env"] = {**(kwargs.get("env") or os.environ), "TMPDIR": str(self._tmp)}
        result: dict[str, Any] = await super().pre_launch(cmd=cmd, **kwargs)
        return result

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        stdout, stderr = kwargs.get("stdout"), kwargs.get("stderr")
        if self._fork is not None and isinstance(stdout, int) and isinstance(stderr, int):
            self.process = await self._fork(
                self._argv,
                env=kwargs.get("env") or dict(os.environ),
                cwd=kwargs.get("cwd") or os.getcwd(),
                stdout=stdout,
                stderr=stderr,
            )
            if self.process is not None:
                self.pid, self.exit_code = self.process.pid, None
                return self.connection_info
        self.process = subprocess.Popen(
            cmd,
            cwd=kwargs.get("cwd"),
            env=kwargs.get("env"),
            stdin=subprocess.DEVNULL,
            stdout=kwargs.get("stdout", subprocess.DEVNULL),
            stderr=kwargs.get("stderr", subprocess.DEVNULL),
            start_new_session=True,
        )
        self.pid, self.exit_code = self.process.pid, None
        if self._lifeline is not None:
            self._lifeline.hold(self.pid)
        return self.connection_info

    async def poll(self) -> int | None:
        process = self.process
        if process is None:
            return self.exit_code
        if self._lifeline is not None and isinstance(process, subprocess.Popen):
            return self._lifeline.poll(process)  # released before it is reaped
        return process.poll()

    async def wait(self) -> int | None:
        """Wait for the kernel process to end (on a pidfd) and reap it; its exit code."""
        process = self.process
        if process is not None:
            if isinstance(process, EndsAsync):
                await process.ended()
            elif process.returncode is None:
                await await_exit(process.pid)
            if self._lifeline is not None:
                self._lifeline.release(process.pid)  # before it is reaped
            self.exit_code = process.wait()
            self.process = None
            await self._remove_tmp()
        return self.exit_code

    async def send_signal(self, signum: int) -> None:
        """Signal the kernel's process group (the kernel and what it started)."""
        if not signal_group(self.pid, signum) and self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signum)

    async def kill(self, restart: bool = False) -> None:
        """SIGKILL the group, and every process of the kernel's session that left it
        (found among all the host's processes, unless the kernel's end takes them)."""
        await self.send_signal(signal.SIGKILL)
        process = self.process
        if self.pid > 0 and not (isinstance(process, EndsAsync) and process.ends_its_tree):
            await end_session(self.pid)

    async def terminate(self, restart: bool = False) -> None:
        await self.send_signal(signal.SIGTERM)

    async def cleanup(self, restart: bool = False) -> None:
        """:meth:`wait` reaps the process (a forked kernel's sandbox too); its
        ``TMPDIR`` goes, if it had one of its own."""
        if self.process is None:
            await self._remove_tmp()

    async def _remove_tmp(self) -> None:
        tmp, self._tmp = self._tmp, None
        if tmp is not None:
            await anyio.to_thread.run_sync(remove_tree, tmp)
