"""The kernel provisioner of the shipped kernelspecs (``lmc-provisioner`` in
``kernel.json``): the kernel's command line through the session's launcher, in a
session and process group of its own; :meth:`LmcProvisioner.wait` waits on a pidfd.
A launcher that can fork the command line (:class:`~..base.ForkingLauncher`)
is asked to first."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from typing import Any

from jupyter_client.provisioning.provisioner_base import KernelProvisionerBase

from ...procs import end_session, signal_group, wait_for_exit
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
        manager.write_connection_file()
        # The kernel may run as another user (the sandbox's); only the host writes the folder.
        os.chmod(manager.connection_file, 0o644)
        self.connection_info = manager.get_connection_info()
        cmd = manager.format_kernel_cmd(extra_arguments=extra)
        self._argv = list(cmd)
        if wrap is not None:
            cmd = wrap(cmd)
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
        return self.connection_info

    async def poll(self) -> int | None:
        return self.process.poll() if self.process is not None else self.exit_code

    async def wait(self) -> int | None:
        """Wait for the kernel process to end (on a pidfd) and reap it; its exit code."""
        process = self.process
        if process is not None:
            if isinstance(process, EndsAsync):
                await process.ended()
            elif process.returncode is None:
                await wait_for_exit(process.pid, process.wait)
            self.exit_code = process.wait()
            self.process = None
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
        """Nothing to clean: :meth:`wait` reaps the process (a forked kernel's
        sandbox too)."""
