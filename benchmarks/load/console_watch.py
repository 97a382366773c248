"""What watching costs the server: its own CPU (the ``lmc serve`` process, not
the sessions' sandboxes) while N consoles show the sessions page over M
sessions, against the same minute with no console.

Starts its own ``lmc serve`` on a free loopback port; the consoles are
Playwright pages in Debian's chromium. Run from the repository's root::

    python -m benchmarks.load.console_watch --sessions 50 --consoles 5 --seconds 60
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
from playwright.sync_api import sync_playwright

logger = logging.getLogger("console_watch")

TOKEN = "console-watch-token-0123456789"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _measure(process: psutil.Process, seconds: float) -> float:
    """The server's CPU over ``seconds``, as a share of one core."""
    before, start = _cpu_seconds(process), time.monotonic()
    time.sleep(seconds)
    return (_cpu_seconds(process) - before) / (time.monotonic() - start)


@contextmanager
def serving(*extra: str) -> Iterator[tuple[str, int]]:
    """A ``lmc serve`` of its own (no warm pool, ``extra`` options): its URL and pid."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)
        argv = [sys.executable, "-m", "lmc_runtime", "serve", "--port", str(port)]
        argv += ["--data-dir", str(Path(tmp) / "data"), "--pool-size", "0", *extra]
        server = subprocess.Popen(
            argv,
            env={**os.environ, "LMC_TOKEN": TOKEN},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(url + "/healthz", timeout=5).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("lmc serve did not start")
                time.sleep(0.2)
            yield url, server.pid
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                server.kill()


def run(sessions: int, consoles: int, seconds: float, language: str) -> dict[str, float]:
    with serving("--max-sessions", str(sessions + 2)) as (url, pid):
        client = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
        )
        for _ in range(sessions):
            response = client.post("/v1/sessions", json={"languages": [language]})
            response.raise_for_status()
        logger.info("%d %s sessions made", sessions, language)
        process = psutil.Process(pid)
        time.sleep(5)  # the creations' tail
        idle = _measure(process, seconds)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            pages = []
            for _ in range(consoles):
                page = browser.new_page()
                page.goto(url + "/ui/")
                page.fill("#token", TOKEN)
                page.click("#login-form button[type=submit]")
                page.click("#nav a[data-page='sessions']")
                page.wait_for_selector(f"#feed-state:has-text('{sessions} sessions')")
                pages.append(page)
            watched = _measure(process, seconds)
            browser.close()
        return {
            "sessions": sessions,
            "consoles": consoles,
            "seconds": seconds,
            "cpu_no_console": idle,
            "cpu_watched": watched,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--consoles", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--language", default="shell")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    result = run(args.sessions, args.consoles, args.seconds, args.language)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
