"""The service's cost: ``RemoteComputer`` on a real ``lmc serve`` against the
in-process ``Computer``, in the same run.

The server runs without the sandbox (``--no-sandbox``, on loopback, a token of
its own), so the figures are those of the wire: HTTP or the WebSocket, JSON a
message, the ASGI stream, and not of bubblewrap or cgroup quotas. Every
contender runs in the same event loop (the benchmark's portal) and takes turns.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from importlib.util import find_spec
from pathlib import Path
from typing import IO, Any, Literal

from .model import Timing
from .rig import Rig, Sampler, alternate
from .service_figures import ServiceFigures
from .workloads import LINES_LARGE, PRINT_ONE, BenchError, print_lines

__all__ = ["local_server", "missing_for_service", "service_phase"]

logger = logging.getLogger(__name__)

_ANNOUNCED = re.compile(r"listening on (http://\S+)")
_START_TIMEOUT = 60.0


def missing_for_service() -> str | None:
    """Why the service's rows cannot be measured here (an extra missing), or None."""
    for module, extra in (("uvicorn", "serve"), ("fastapi", "serve"), ("websockets", "client")):
        if find_spec(module) is None:
            return f"the service rows need the [{extra}] extra ({module} is missing)"
    return None


def _announced_url(out: IO[str], process: subprocess.Popen[str], timeout: float) -> str:
    """The URL the server prints once it serves (bounded by ``timeout``)."""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(out, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                break
            line = out.readline()
            if not line:
                raise BenchError(f"lmc serve exited with status {process.wait(10)}")
            found = _ANNOUNCED.search(line)
            if found:
                return found.group(1)
    raise BenchError(f"lmc serve did not announce itself in {timeout:g} s")


@contextmanager
def local_server(*serve_args: str, token: str | None = None) -> Iterator[tuple[str, str]]:
    """A real ``lmc serve`` on a free loopback port, given ``serve_args`` (by
    default ``--no-sandbox --pool-size 0``): its URL and token."""
    token = token or secrets.token_urlsafe(24)
    with ExitStack() as stack:
        data = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lmc-bench-")))
        os.chmod(data, 0o711)  # a sandbox's user passes through to its own folder
        log = stack.enter_context(open(data / "serve.log", "w"))
        argv = [sys.executable, "-m", "lmc_runtime", "serve", "--port", "0"]
        argv += ["--data-dir", str(data / "data"), "--log-level", "warning"]
        argv += serve_args or ("--no-sandbox", "--pool-size", "0")
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, "LMC_TOKEN": token},
        )
        assert process.stdout is not None
        stack.callback(_stop, process)
        url = _announced_url(process.stdout, process, _START_TIMEOUT)
        # Whatever it prints later is read, so that a full pipe never blocks it.
        threading.Thread(target=process.stdout.read, daemon=True).start()
        yield url, token


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def _open_remote(
    rig: Rig, stack: ExitStack, url: str, token: str, transport: Literal["http", "websocket"]
) -> Any:
    from lmc_runtime.remote import RemoteComputer, RemoteTimeouts

    computer = RemoteComputer(
        url, token=token, transport=transport, timeouts=RemoteTimeouts(request=rig.plan.timeout * 4)
    )
    return stack.enter_context(rig.portal.wrap_async_context_manager(computer))


def _throughput(rig: Rig, computer: Any) -> float:
    """Lines per second of the 200k-line cell, median of the plan's runs."""
    code = print_lines(LINES_LARGE)
    times = [
        rig.ours_outcome(computer, code, rig.plan.long_timeout).seconds
        for _ in range(rig.plan.throughput)
    ]
    return LINES_LARGE / Timing.from_seconds(times).median_ms * 1000


def service_phase(rig: Rig) -> ServiceFigures:
    """Warm ``print(1)`` round trips and the 200k-line throughput, both sides."""
    plan = rig.plan
    with ExitStack() as stack:
        url, token = stack.enter_context(local_server())
        logger.info("service: lmc serve --no-sandbox at %s", url)
        http = _open_remote(rig, stack, url, token, "http")
        websocket = _open_remote(rig, stack, url, token, "websocket")
        samplers: dict[str, Sampler] = {
            "local": partial(rig.ours_round_trips, rig.tracked, PRINT_ONE),
            "http": partial(rig.ours_round_trips, http, PRINT_ONE),
            "websocket": partial(rig.ours_round_trips, websocket, PRINT_ONE),
        }
        logger.info("service round trip: warming up (%d each)", plan.warmup)
        for sampler in samplers.values():
            sampler(plan.warmup)
        logger.info("service round trip: %d each, in blocks of %d", plan.repeat, plan.block)
        trips = alternate(samplers, plan.repeat, plan.block)
        logger.info("service throughput: %d run(s) of %d lines each", plan.throughput, LINES_LARGE)
        remote_lines = _throughput(rig, http)
        local_lines = _throughput(rig, rig.tracked)
        logger.info("service: shutting the server down")
    return ServiceFigures(
        local=Timing.from_seconds(trips["local"]),
        http=Timing.from_seconds(trips["http"]),
        websocket=Timing.from_seconds(trips["websocket"]),
        throughput_local=local_lines,
        throughput_http=remote_lines,
    )
