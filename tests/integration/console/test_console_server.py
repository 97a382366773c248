"""The server page in a real browser: its charts come from the history of the
server's own metrics that the server keeps (``GET /v1/metrics/history``), so
they show what happened before the page was opened."""

from __future__ import annotations

import itertools
import time
from typing import Any

from ..service.server import Server
from .conftest import logged_in, screenshot

#: Seconds to wait for the server's next point at the most (one every 5 s).
WAIT = 20.0


def history(server: Server, after: float | None = None) -> dict[str, Any]:
    with server.client() as client:
        query = {} if after is None else {"after": after}
        answer = client.get("/v1/metrics/history", params=query)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


def point_with_runs(server: Server, since: float) -> dict[str, Any]:
    """The server's first point after ``since`` that counts runs (polled: the
    server adds one every ``period`` seconds)."""
    deadline = time.monotonic() + WAIT
    while True:
        for point in history(server, after=since)["points"]:
            if point["runs_per_second"]:
                return point
        assert time.monotonic() < deadline, f"no point with runs in {WAIT:g} s"
        time.sleep(0.5)


def figure(page: Any, name: str) -> Any:
    return page.locator(f"#server-charts figure[data-name='{name}']")


def test_the_server_keeps_its_figures_over_the_last_minutes(server: Server) -> None:
    session_id = server.create(languages=["python"])
    try:
        since = time.time()
        for n in range(5):
            server.execute(session_id, f"print({n})")
        point = point_with_runs(server, since)
        assert point["sessions"] >= 1
        assert 0 < point["p50_ms"] <= point["p99_ms"] < 60_000
        whole = history(server)
        assert whole["period"] == 5 and whole["keep"] == 180
        times = [p["at"] for p in whole["points"]]
        assert times == sorted(times) and point["at"] in times
        assert all(later - earlier >= 4 for earlier, later in itertools.pairwise(times))
        assert history(server, after=point["at"])["points"] == [
            p for p in whole["points"] if p["at"] > point["at"]
        ]
        with server.client(token="not-the-token") as stranger:
            assert stranger.get("/v1/metrics/history").status_code == 401
    finally:
        server.delete(session_id)


def test_the_page_shows_points_from_before_it_was_opened(page: Any, server: Server) -> None:
    session_id = server.create(languages=["python"])
    try:
        since = time.time()
        for n in range(5):
            server.execute(session_id, f"print({n})")
        before = point_with_runs(server, since)
        opened = time.time()
        logged_in(page)
        page.click("#nav a[data-page='server']")
        page.wait_for_selector("#server-figures dd")
        assert "ok" in page.inner_text("#server-figures")
        charts = page.wait_for_selector("#server-charts[data-points]")
        assert float(str(charts.get_attribute("data-from"))) <= before["at"] < opened
        shown = int(str(charts.get_attribute("data-points")))
        assert shown >= 2
        assert float(str(figure(page, "runs_per_second").get_attribute("data-peak"))) > 0
        p50 = float(str(figure(page, "p50_ms").get_attribute("data-peak")))
        p99 = float(str(figure(page, "p99_ms").get_attribute("data-peak")))
        assert 0 < p50 <= p99 < 60_000
        assert figure(page, "sessions").locator("svg polyline").count() >= 1
        # While it is open, the server's next points are added.
        page.wait_for_selector(f"#server-charts:not([data-points='{shown}'])", timeout=WAIT * 1000)
        screenshot(page, "server")
    finally:
        server.delete(session_id)
