"""Density: what an idle sandboxed session costs ``lmc serve``, and how fast a new
one starts (``lmc bench --only density``).

One real ``lmc serve`` (the sandbox when this host gives it, the pool off)
creates sessions one after the other, each to its first ``print(1)`` result:
those are the cold starts. When it holds 10 (and 100, and 300 if asked) idle
sessions, the PSS of its whole process tree, the server's growth since it
started included, is divided by their number, and broken down by kind of
process; shell, JavaScript and R sessions are measured too, at N = 10, each
on a server of its own. A further server, with a pool of one, takes a burst of
creations at once, once its pool holds its session. A Jupyter Kernel Gateway,
if installed, holds as many bare kernels (unsandboxed, as it runs them),
measured the same way.
"""

from __future__ import annotations

import json
import logging
import selectors
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from importlib.util import find_spec

import anyio

from lmc_runtime.backends.registry import Registry
from lmc_runtime.sandbox import sandbox_available

from . import pss
from .density_figures import DensityAt, DensityFigures, KindFigure, Starts
from .service import local_server
from .workloads import PRINT_ONE, BenchError

__all__ = ["density_phase"]

logger = logging.getLogger(__name__)

_GATEWAY_START = 60.0
_REQUEST_TIMEOUT = 300.0


def _server_pid() -> int:
    """The ``lmc serve`` (or gateway) this process started last."""
    found = pss.child_running(b"serve", b"kernel_gateway")
    if found is None:
        raise BenchError("the server's process is not a child of this one")
    return found


def _measure(name: str, root: int, base_kib: int, sessions: int) -> DensityAt:
    processes = pss.tree_memory(root)
    server = next((p for p in processes if p.kind == "server"), None)
    growth = (server.pss - base_kib) if server else 0
    total = sum(p.pss for p in processes if p.kind != "server") + growth
    kinds = [
        KindFigure.of(kind, t)
        for kind, t in sorted(pss.by_kind(processes).items(), key=lambda kv: -kv[1].pss)
    ]
    return DensityAt(name, sessions, total / sessions / 1024, growth / 1024, kinds)


#: The other languages' sessions, measured at N = 10: what each runs, printing 1.
OTHER_LANGUAGES = {"shell": "echo 1", "javascript": "console.log(1)", "r": "cat('1\\n')"}


def _ran(messages: list[object]) -> None:
    printed = "".join(
        str(getattr(m, "content", "")) for m in messages if getattr(m, "format", "") == "output"
    )
    if printed != "1\n":
        raise BenchError(f"printing 1 printed {printed!r}")


def _ours(
    counts: Sequence[int],
    sandboxed: bool,
    figures: DensityFigures,
    language: str = "python",
    code: str = PRINT_ONE,
) -> None:
    """Sequential creations of ``language`` sessions on one server, each running
    ``code``, measured at each of ``counts`` (the cold starts: Python's alone)."""
    from lmc_runtime.remote import RemoteComputer, RemoteTimeouts

    args = ["--pool-size", "0", "--max-sessions", str(max(counts) + 10)]
    args += [] if sandboxed else ["--no-sandbox"]
    with ExitStack() as stack:
        url, token = stack.enter_context(local_server(*args))
        root = _server_pid()
        base = pss.memory_of(root, "server")
        times: list[float] = []
        cpu_before, began = pss.cpu_seconds(root), time.perf_counter()
        for count in sorted(counts):
            while len(times) < count:
                start = time.perf_counter()
                computer = RemoteComputer(
                    url,
                    token=token,
                    languages=[language],
                    timeouts=RemoteTimeouts(request=_REQUEST_TIMEOUT),
                )
                stack.callback(computer.close)
                _ran(list(computer.run(language, code)))
                times.append(time.perf_counter() - start)
            if len(times) == min(counts) and language == "python":
                wall, cpu = time.perf_counter() - began, pss.cpu_seconds(root) - cpu_before
                figures.cold = Starts.of("sequential, pool off", times, wall, cpu)
            logger.info("density: %d sessions open", count)
            name = "lmc serve" if language == "python" else f"lmc serve, {language}"
            figures.at.append(_measure(name, root, base.pss if base else 0, count))


async def _burst_async(url: str, token: str, count: int) -> list[float]:
    from lmc_runtime.remote import RemoteComputer, RemoteTimeouts

    times: list[float] = []
    done = anyio.Event()

    async def one() -> None:
        start = time.perf_counter()
        computer = RemoteComputer(
            url, token=token, timeouts=RemoteTimeouts(request=_REQUEST_TIMEOUT)
        )
        async with computer:
            _ran([m async for m in computer.arun("python", PRINT_ONE)])
            times.append(time.perf_counter() - start)
            if len(times) == count:
                done.set()
            await done.wait()  # every session stays open until the last has answered

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one)
    return times


#: Seconds the burst waits for the server's pool to hold its one session.
_POOL_BOUND = 60.0


def _pool_filled(url: str) -> bool:
    """Whether the server's pool holds a session (``/healthz``), waited for at most
    :data:`_POOL_BOUND` seconds: the burst is then past a full pool of one, not
    racing the server's own start (its fork server's, its pool's first kernel)."""
    import httpx

    deadline = time.monotonic() + _POOL_BOUND
    with httpx.Client(base_url=url, timeout=5) as client:
        while time.monotonic() < deadline:
            if int(client.get("/healthz").json().get("pool_ready", 0)) >= 1:
                return True
            time.sleep(0.05)  # the server says its pool is full only when asked
    return False


def _burst(count: int, sandboxed: bool) -> Starts:
    """``count`` creations at once past a full pool of one."""
    args = ["--pool-size", "1", "--max-sessions", str(count + 10)]
    args += [] if sandboxed else ["--no-sandbox"]
    with local_server(*args) as (url, token):
        if not _pool_filled(url):
            logger.warning("density: the pool held no session after %.0f s", _POOL_BOUND)
        root = _server_pid()
        cpu_before, began = pss.cpu_seconds(root), time.perf_counter()
        times = anyio.run(_burst_async, url, token, count)
        wall, cpu = time.perf_counter() - began, pss.cpu_seconds(root) - cpu_before
    return Starts.of(f"{count} at once, past a full pool of 1", times, wall, cpu)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _kernel_gateway() -> Iterator[str]:
    """A Jupyter Kernel Gateway on a free loopback port: its URL, once it says it
    serves."""
    port = _free_port()
    argv = [sys.executable, "-m", "kernel_gateway", "--KernelGatewayApp.ip=127.0.0.1"]
    argv += [f"--KernelGatewayApp.port={port}"]
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    try:
        deadline = time.monotonic() + _GATEWAY_START
        with selectors.DefaultSelector() as selector:
            selector.register(process.stderr, selectors.EVENT_READ)
            while b"is available at" not in process.stderr.readline():
                left = deadline - time.monotonic()
                if process.poll() is not None or left <= 0 or not selector.select(left):
                    raise BenchError("the kernel gateway did not start")
        # What it logs later is read, so that a full pipe never blocks it.
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _bare_kernel(url: str) -> None:
    """Start a kernel of the gateway's default kernelspec and run ``print(1)`` in
    it, over the Jupyter protocol on its channels' WebSocket."""
    import httpx
    from websockets.sync.client import connect

    kernel = httpx.post(f"{url}/api/kernels", json={}, timeout=_REQUEST_TIMEOUT).json()
    msg_id = uuid.uuid4().hex
    request = {
        "header": {
            "msg_id": msg_id,
            "msg_type": "execute_request",
            "session": uuid.uuid4().hex,
            "username": "bench",
            "version": "5.3",
        },
        "parent_header": {},
        "metadata": {},
        "content": {"code": PRINT_ONE, "silent": False, "store_history": False},
        "channel": "shell",
    }
    ws_url = url.replace("http", "ws", 1) + f"/api/kernels/{kernel['id']}/channels"
    printed = ""
    with connect(ws_url, open_timeout=_REQUEST_TIMEOUT) as channels:
        channels.send(json.dumps(request))
        replied = idle = False
        while not (replied and idle):  # the reply and IOPub's last message, in any order
            message = json.loads(channels.recv(timeout=_REQUEST_TIMEOUT))
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            printed += content["text"] if kind == "stream" else ""
            replied = replied or kind == "execute_reply"
            idle = idle or (kind == "status" and content["execution_state"] == "idle")
    if printed != "1\n":
        raise BenchError(f"print(1) printed {printed!r} in the gateway's kernel")


def _gateway(counts: Sequence[int], figures: DensityFigures) -> None:
    """As many bare kernels on a Jupyter Kernel Gateway, measured the same way."""
    with _kernel_gateway() as url:
        root = _server_pid()
        base = pss.memory_of(root, "server")
        opened = 0
        for count in sorted(counts):
            while opened < count:
                _bare_kernel(url)
                opened += 1
            at = _measure("Jupyter Kernel Gateway", root, base.pss if base else 0, count)
            figures.at.append(at)


def density_phase(*, quick: bool = False, large: bool = False) -> DensityFigures:
    """N = 10 and 100 (10 alone if ``quick``; 300 too if ``large``), the cold starts,
    the other languages at N = 10, the burst of 100 (20 if ``quick``), and the
    gateway's kernels when installed."""
    counts = [10] if quick else [10, 100, *([300] if large else [])]
    sandboxed = sandbox_available().available
    figures = DensityFigures(sandboxed=sandboxed)
    if not sandboxed:
        figures.notes.append(f"no sandbox here ({sandbox_available().reason}): --no-sandbox")
    _ours(counts, sandboxed, figures)
    registry = Registry()
    for language, code in OTHER_LANGUAGES.items():
        if registry.availability(language).available:
            _ours([10], sandboxed, figures, language, code)
        else:
            figures.notes.append(f"{language}: not available here, not measured")
    figures.burst = _burst(20 if quick else 100, sandboxed)
    if find_spec("kernel_gateway") is not None:
        try:
            _gateway(counts, figures)
        except Exception as exc:  # the peer gave out: said, the rest still printed
            figures.notes.append(
                f"Jupyter Kernel Gateway failed past {len(figures.at)} figures: {exc!r}"
            )
    else:
        figures.notes.append("no Jupyter Kernel Gateway installed: its kernels are not measured")
    figures.notes.append(
        "PSS per session: the PSS of every process of the server's tree plus the server's "
        "own growth since it started, divided by the sessions; CPU: user and system time of "
        "the server's tree, reaped children included"
    )
    return figures
