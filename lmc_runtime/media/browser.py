"""Screenshots of an HTML file by headless Chromium, with the network shut off.

Chromium runs once per screenshot, in its own process group, with a fresh
profile. The page cannot reach the network: every host name resolves to
nothing (``--host-resolver-rules``), and every request, loopback included,
goes to a proxy on a port where nothing listens (``--proxy-server`` with
``<-loopback>`` removing the implicit loopback bypass). WebRTC may not send
UDP around the proxy.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import Process

from ..hostfs import HostDir, UnsafeEntry, remove_tree
from ..lifeline import Lifeline
from ..procs import read_tail, signal_group
from .launch import Launch

__all__ = [
    "CHROMIUM_NAMES",
    "Screenshot",
    "chromium_argv",
    "find_chromium",
    "screenshot_page",
    "take_screenshot",
]

#: What Chromium is called on the systems lmc-runtime knows.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

_LOG_TAIL = 600


@dataclass(frozen=True)
class Screenshot:
    """What one attempt gave: the PNG, or why there is none.

    ``status`` is ``ok``, ``timeout``, ``interrupted``, ``kernel_died`` (a
    signal killed Chromium: the OOM killer, an operator) or ``error``.
    """

    status: str
    png: bytes | None = None
    problem: str | None = None


def find_chromium(chromium: str | None = None, path: str | None = None) -> str | None:
    """The Chromium to run: ``chromium`` (a name or a path) or the first of
    :data:`CHROMIUM_NAMES` found on ``path`` (the process's PATH by default)."""
    search = path if path is not None else os.environ.get("PATH", os.defpath)
    for name in (chromium,) if chromium is not None else CHROMIUM_NAMES:
        found = shutil.which(name, path=search)
        if found is not None:
            return found
    return None


def chromium_argv(
    chromium: str, page: Path, png: Path, profile: Path, window: tuple[int, int]
) -> list[str]:
    """The command line that renders ``page`` into ``png``, offline."""
    width, height = window
    return [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-quic",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--no-default-browser-check",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        f"--screenshot={png}",
        page.as_uri(),
    ]


#: The largest screenshot read back.
_PNG_LIMIT = 64 << 20


async def take_screenshot(
    argv: Sequence[str],
    folder: HostDir,
    png: str,
    log: Path,
    launch: Launch,
    *,
    timeout: float,
    stop: anyio.Event,
) -> Screenshot:
    """Run ``argv`` (from :func:`chromium_argv`) until it has written ``png`` in
    ``folder`` (read back through the folder's descriptor, never through a link).

    After ``timeout`` seconds, or once ``stop`` is set, Chromium and every
    process it started are killed.
    """
    with open(log, "wb") as log_file:
        process = await anyio.open_process(
            launch.wrap(argv),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=launch.cwd,
            env={**os.environ, **launch.env},
            start_new_session=True,
        )
    status, code = await _wait(process, timeout=timeout, stop=stop, lifeline=launch.lifeline)
    if status == "timeout":
        return Screenshot(status, problem=f"Chromium did not finish within {timeout:g} s")
    if status == "interrupted":
        return Screenshot(status, problem="the screenshot was interrupted")
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else -code
        return Screenshot(
            "kernel_died",
            problem=f"Chromium was killed by {name} while it rendered "
            "(nothing is kept between renders: the next one starts afresh)",
        )
    return _read_png(folder, png, log, code)


async def screenshot_page(
    launch: Launch,
    chromium: str,
    page_text: str,
    window: tuple[int, int],
    *,
    timeout: float,
    stop: anyio.Event,
) -> Screenshot:
    """A screenshot of the HTML ``page_text`` by Chromium started as ``launch``
    says (a session's sandbox, user and cgroup).

    The page and the log are in the host's own folder (``work_dir``); Chromium's
    profile and the screenshot, which Chromium writes, in ``shared_dir``, from
    where the screenshot is read without following any link.
    """
    name = f"render-{secrets.token_hex(6)}"
    folder = launch.work_dir / name
    await anyio.to_thread.run_sync(lambda: folder.mkdir(parents=True))
    shared = launch.shared_dir
    profile = shared / f"{name}-profile"
    try:
        page = folder / "page.html"
        await anyio.to_thread.run_sync(lambda: page.write_text(page_text, encoding="utf-8"))
        argv = chromium_argv(chromium, page, shared / f"{name}.png", profile, window)
        with HostDir(shared) as where:
            shot = await take_screenshot(
                argv,
                where,
                f"{name}.png",
                folder / "chromium.log",
                launch,
                timeout=timeout,
                stop=stop,
            )
            with contextlib.suppress(OSError):
                where.remove(f"{name}.png")
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(shutil.rmtree, folder, True)
            await anyio.to_thread.run_sync(remove_tree, profile)
    return shot


async def _wait(
    process: Process, *, timeout: float, stop: anyio.Event, lifeline: Lifeline | None
) -> tuple[str, int | None]:
    """Wait for Chromium: ("ok", its code), or "timeout"/"interrupted"; its group is killed."""
    status = "ok"
    code: int | None = None
    if lifeline is not None:
        lifeline.hold(process.pid)
    try:
        async with anyio.create_task_group() as tg:

            async def stopped() -> None:
                nonlocal status
                await stop.wait()
                status = "interrupted"
                tg.cancel_scope.cancel()

            tg.start_soon(stopped)
            with anyio.move_on_after(timeout) as deadline:
                code = await process.wait()
            if deadline.cancelled_caught:
                status = "timeout"
            tg.cancel_scope.cancel()
    finally:
        if lifeline is not None:
            lifeline.release(process.pid)  # ended, or ended here, before it is reaped
        signal_group(process.pid)  # the renderer, GPU and zygote processes too
        with anyio.CancelScope(shield=True):
            await process.wait()
    return status, code


def _read_png(folder: HostDir, png: str, log: Path, code: int | None) -> Screenshot:
    """The screenshot Chromium wrote (exit ``code``), or why there is none."""
    data: bytes | None = None
    problem = f"Chromium exited with code {code}"
    if code == 0:  # code is set: neither stopped nor timed out
        try:
            data = folder.read(png, _PNG_LIMIT)
        except UnsafeEntry as exc:
            problem = f"the screenshot could not be read: {exc}"
    if data is None or not data.startswith(b"\x89PNG"):
        tail = read_tail(log, skip="dbus")[-_LOG_TAIL:]
        if data is not None:
            problem = "the screenshot is not a PNG image"
        return Screenshot("error", problem=problem + (f":\n{tail}" if tail else ""))
    return Screenshot("ok", png=data)
