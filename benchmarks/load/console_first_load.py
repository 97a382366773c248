"""The web console's first load on loopback: requests, bytes transferred and
time to interactive of ``/ui/`` in a fresh browser context (nothing cached),
and the time logging in takes.

Starts its own ``lmc serve`` on a free loopback port and drives Debian's
chromium with Playwright. Time to interactive is from ``page.goto`` to the
page's handlers being in place (``body[data-ready]``); bytes are the
``transferSize`` of the page's ``performance`` entries (compressed, as sent).
Run from the repository's root::

    python -m benchmarks.load.console_first_load --rounds 10
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from typing import Any

from playwright.sync_api import sync_playwright

from .console_watch import ARGS, CHROMIUM, TOKEN, serving

logger = logging.getLogger("console_first_load")

#: Every request of the first load, and its bytes on the wire.
ENTRIES = """
[...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")]
  .map((e) => ({ name: e.name, bytes: e.transferSize, body: e.decodedBodySize }))
"""


def one_load(browser: Any, url: str) -> dict[str, Any]:
    """One first load and log-in, in a fresh context."""
    context = browser.new_context()
    try:
        page = context.new_page()
        start = time.perf_counter()
        page.goto(url + "/ui/")
        page.wait_for_selector("body[data-ready='true']")
        interactive = time.perf_counter() - start
        entries = page.evaluate(ENTRIES)
        page.fill("#token", TOKEN)
        start = time.perf_counter()
        page.click("#login-form button[type=submit]")
        page.wait_for_selector("body[data-page='playground']")
        logged_in = time.perf_counter() - start
        return {
            "interactive_ms": interactive * 1000,
            "login_ms": logged_in * 1000,
            "requests": len(entries),
            "bytes": sum(e["bytes"] for e in entries),
            "body_bytes": sum(e["body"] for e in entries),
        }
    finally:
        context.close()


def run(rounds: int) -> dict[str, Any]:
    with serving() as (url, _), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            one_load(browser, url)  # the server's and the browser's first time: not counted
            loads = [one_load(browser, url) for _ in range(rounds)]
        finally:
            browser.close()
    interactive = [load["interactive_ms"] for load in loads]
    login = [load["login_ms"] for load in loads]
    return {
        "rounds": rounds,
        "requests": loads[-1]["requests"],
        "bytes": loads[-1]["bytes"],
        "body_bytes": loads[-1]["body_bytes"],
        "interactive_ms_median": round(statistics.median(interactive), 1),
        "interactive_ms_max": round(max(interactive), 1),
        "login_ms_median": round(statistics.median(login), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    sys.stdout.write(json.dumps(run(args.rounds)) + "\n")


if __name__ == "__main__":
    main()
