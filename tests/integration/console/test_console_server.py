"""The server page in a real browser: its figures and charts come from the
server's own /metrics."""

from __future__ import annotations

import re
from typing import Any

from ..service.server import Server
from .conftest import logged_in, screenshot


def caption(page: Any, title: str) -> str:
    return str(page.inner_text(f"#server-charts figcaption:has-text('{title}')"))


def test_runs_per_second_and_latency_from_the_metrics(page: Any, server: Server) -> None:
    session_id = server.create(languages=["python"])
    try:
        logged_in(page)
        page.click("#nav a[data-page='server']")
        page.wait_for_selector("#server-figures dd")
        assert "ok" in page.inner_text("#server-figures")
        page.wait_for_selector("body[data-server-samples='1']")
        for n in range(5):
            server.execute(session_id, f"print({n})")
        page.wait_for_selector("body[data-server-samples='2']", timeout=15_000)
        rate = re.search(r"runs per second: ([\d.]+)", caption(page, "runs per second"))
        assert rate is not None and float(rate.group(1)) > 0
        p50 = re.search(r"p50 run latency: (\d+) ms", caption(page, "p50"))
        p99 = re.search(r"p99 run latency: (\d+) ms", caption(page, "p99"))
        assert p50 is not None and p99 is not None
        assert 0 < int(p50.group(1)) <= int(p99.group(1)) < 60_000
        assert caption(page, "sessions").startswith("sessions: 1")
        screenshot(page, "server")
    finally:
        server.delete(session_id)
