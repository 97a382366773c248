"""A real ``jupyter kernelgateway`` (or Enterprise Gateway, from a Python of its
own) on a free loopback port, for the gateway tests.

It is started and stopped like the real thing: readiness is its own log line
saying where it listens (read by a thread that keeps draining its output),
and a stop ends it, the kernels it started with it. A stopped gateway can be
started again on the same port.
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import psutil

from ...lifeline import tie

__all__ = ["TOKEN", "EnterpriseGateway", "KernelGateway", "free_port"]

TOKEN = "gateway-test-token"
#: Its log line once it listens.
_READY = "is available at"
_START_BOUND = 60.0
_STOP_BOUND = 20.0
_POLL_KERNELS, _SHUTDOWN_WAIT = 0.5, 0.5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class KernelGateway:
    """One Kernel Gateway process at a time, on ``port``, logging to ``log``."""

    def __init__(self, work_dir: Path, *, port: int | None = None, token: str = TOKEN) -> None:
        self.port = port or free_port()
        self.token = token
        self.work_dir = work_dir
        self.log: list[str] = []
        self._logged = threading.Condition()
        self.process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "kernel_gateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={self.port}",
            "--KernelGatewayApp.port_retries=0",
            f"--KernelGatewayApp.auth_token={self.token}",
            # How often it polls its kernels for a death (3 s by default): tests of
            # killed kernels wait for it to notice. And how long a kernel asked to
            # shut down has before it is ended (5 s): tests of code that ignores
            # interrupts wait for that.
            f"--KernelRestarter.time_to_dead={_POLL_KERNELS}",
            f"--KernelManager.shutdown_wait_time={_SHUTDOWN_WAIT}",
        ]

    def environment(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}

    def start(self) -> None:
        """Start it; return once it says it listens (AssertionError with its log if not)."""
        self.process = subprocess.Popen(
            self.command(),
            cwd=self.work_dir,
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its session ends with this process (tie)
        )
        tie(self.process)
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._drain, args=(self.process, lines), daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=_START_BOUND)
            except queue.Empty:
                line = None
            assert line is not None, f"the gateway did not start: {''.join(self.log)}"
            if _READY in line:
                return

    def _drain(self, process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            with self._logged:
                self.log.append(line)
                self._logged.notify_all()
            lines.put(line)
        lines.put(None)

    def wait_for_log(self, text: str, *, after: int = 0) -> None:
        """Return once a log line after the first ``after`` holds ``text`` (bounded)."""
        with self._logged:
            found = self._logged.wait_for(
                lambda: any(text in line for line in self.log[after:]), timeout=_START_BOUND
            )
        assert found, f"the gateway never logged {text!r}: {''.join(self.log[after:])}"

    def process_info(self) -> psutil.Process:
        assert self.process is not None
        return psutil.Process(self.process.pid)

    def kernels(self) -> list[psutil.Process]:
        """The kernel processes it started (its children)."""
        assert self.process is not None
        return psutil.Process(self.process.pid).children(recursive=True)

    def stop(self) -> None:
        """End it as an operator would (SIGTERM, which shuts its kernels down); then kill."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        children = psutil.Process(process.pid).children(recursive=True)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(_STOP_BOUND)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(_STOP_BOUND)
        for child in children:
            if child.is_running():
                child.kill()


class EnterpriseGateway(KernelGateway):
    """Enterprise Gateway run by ``python`` (a virtualenv holding it), kernels on
    this machine (its local process proxy). It refuses to start kernels for the
    users in ``unauthorized_users`` (root, by default): here nobody is refused."""

    def __init__(self, work_dir: Path, python: Path) -> None:
        super().__init__(work_dir)
        self.python = python

    def command(self) -> list[str]:
        return [
            str(self.python),
            "-m",
            "enterprise_gateway",
            "--EnterpriseGatewayApp.ip=127.0.0.1",
            f"--EnterpriseGatewayApp.port={self.port}",
            "--EnterpriseGatewayApp.port_retries=0",
            f"--EnterpriseGatewayApp.auth_token={self.token}",
            "--EnterpriseGatewayApp.unauthorized_users=nobody-refused",
        ]

    def environment(self) -> dict[str, str]:
        skipped = ("PYTEST_CURRENT_TEST", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
        return {k: v for k, v in os.environ.items() if k not in skipped}
