"""The baseline: a stock kernel (``python3``, ``ir``) on jupyter-client's blocking client."""

from __future__ import annotations

import contextlib
import logging
import queue
import subprocess
import time
from collections.abc import Callable
from typing import Any

from jupyter_client.manager import start_new_kernel

from .workloads import BenchError, timed

__all__ = ["RawKernel", "raw_cold_start"]

logger = logging.getLogger(__name__)

KERNEL_NAME = "python3"

#: Called with each IOPub message of the request (status ``idle`` excluded).
Watcher = Callable[[dict[str, Any]], None]


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the raw kernel did not answer in time")
    return left


class RawKernel:
    """One kernel from ``start_new_kernel`` and its blocking client."""

    def __init__(self, manager: Any, client: Any) -> None:
        self.manager = manager
        self.client = client

    @classmethod
    def start(cls, *, timeout: float, kernel_name: str = KERNEL_NAME) -> RawKernel:
        # The kernel's own log (ipykernel warns about TCP without encryption) is not
        # the bench's output.
        manager, client = start_new_kernel(
            startup_timeout=timeout, kernel_name=kernel_name, stderr=subprocess.DEVNULL
        )
        return cls(manager, client)

    def shutdown(self) -> None:
        """``stop_channels`` then ``shutdown_kernel(now=True)``; never raises."""
        with contextlib.suppress(Exception):
            self.client.stop_channels()
        try:
            self.manager.shutdown_kernel(now=True)
        except Exception:
            logger.warning("shutting the raw kernel down failed", exc_info=True)

    def execute(self, code: str, *, timeout: float, watch: Watcher | None = None) -> None:
        """Run ``code``; return once IOPub said idle and the ``execute_reply`` came."""
        deadline = time.monotonic() + timeout
        try:
            msg_id = self.client.execute(code)
            while True:
                msg = self.client.get_iopub_msg(timeout=_left(deadline))
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                if msg["msg_type"] == "status":
                    if msg["content"].get("execution_state") == "idle":
                        break
                    continue
                if watch is not None:
                    watch(msg)
            while True:
                reply = self.client.get_shell_msg(timeout=_left(deadline))
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
        except queue.Empty as exc:
            raise TimeoutError(f"the raw kernel did not finish {code!r} in {timeout:g} s") from exc
        if reply["content"].get("status") != "ok":
            raise BenchError(f"the raw kernel failed on {code!r}: {reply['content']}")

    def round_trips(self, code: str, count: int, *, timeout: float) -> list[float]:
        """``count`` timed executions of ``code``, in seconds."""
        return timed(lambda: self.execute(code, timeout=timeout), count)

    def collect_stream(self, code: str, *, timeout: float) -> tuple[float, str]:
        """Run ``code`` keeping all its stream text; (seconds, text)."""
        parts: list[str] = []

        def watch(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream":
                parts.append(msg["content"].get("text", ""))

        start = time.perf_counter()
        self.execute(code, timeout=timeout, watch=watch)
        text = "".join(parts)
        return time.perf_counter() - start, text

    def time_to_png(self, code: str, *, timeout: float) -> float:
        """Seconds from sending ``code`` to its first ``image/png`` display_data."""
        start = time.perf_counter()
        seen: list[float] = []

        def watch(msg: dict[str, Any]) -> None:
            if (
                not seen
                and msg["msg_type"] == "display_data"
                and "image/png" in msg["content"].get("data", {})
            ):
                seen.append(time.perf_counter())

        self.execute(code, timeout=timeout, watch=watch)
        if not seen:
            raise BenchError(f"the raw kernel showed no PNG for {code!r}")
        return seen[0] - start


def raw_cold_start(code: str, *, timeout: float) -> float:
    """Seconds from nothing to the first answer to ``code`` (start, execute, idle)."""
    start = time.perf_counter()
    kernel = RawKernel.start(timeout=timeout)
    try:
        kernel.execute(code, timeout=timeout)
        return time.perf_counter() - start
    finally:
        kernel.shutdown()
