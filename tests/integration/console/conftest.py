"""A real ``lmc serve`` and Debian's chromium, driven by Playwright, for the
console's tests: one server and one browser per module, a fresh page per test."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api as playwright_api  # the test extra; drives /usr/bin/chromium

from lmc_runtime.sandbox import sandbox_available

from ..service.server import TOKEN, Server, running_server

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: Where the tests' screenshots go: the docs show them.
IMAGES = Path(__file__).resolve().parents[3] / "docs" / "images"
#: Every wait on the page, in milliseconds.
WAIT_MS = 30_000


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    availability = sandbox_available()
    assert availability.available, f"these tests need bubblewrap: {availability.reason}"
    with running_server("--pool-size", "1", "--max-sessions", "6") as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    assert shutil.which(CHROMIUM), f"these tests need Debian's chromium at {CHROMIUM}"
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    opened.goto(server.url + "/ui/")
    opened.wait_for_selector("body[data-ready='true']")
    try:
        yield opened
    finally:
        context.close()


def log_in(page: Any, token: str = TOKEN) -> None:
    page.fill("#token", token)
    page.click("#login-form button[type=submit]")


def logged_in(page: Any) -> None:
    log_in(page)
    page.wait_for_selector("body[data-page='playground']")


def new_session(page: Any, languages: str = "python,shell") -> str:
    """Create a session with the playground's form; its id."""
    before = page.locator("#session-pick option").count()
    page.fill("#new-languages", languages)
    page.click("#create")
    # not wait_for_function: the CSP has no eval
    made = page.wait_for_selector(f"#session-pick option >> nth={before}", state="attached")
    session_id = str(made.get_attribute("value"))
    page.wait_for_selector(
        f"#session-pick:has(option[value='{session_id}']:checked)", state="attached"
    )
    return session_id


def run(page: Any, code: str) -> str:
    """Run ``code`` in the playground; the final status its badge shows."""
    page.fill("#code", code)
    page.click("#run")
    page.wait_for_selector("#status[data-status]:not([data-status='running'])")
    return str(page.get_attribute("#status", "data-status"))


def screenshot(page: Any, name: str) -> None:
    """A screenshot of the page: into the docs' images with LMC_DOCS_SCREENSHOTS=1
    (how they are made), else into a temporary folder (the run leaves the
    checkout as it was)."""
    if os.environ.get("LMC_DOCS_SCREENSHOTS") == "1":
        folder = IMAGES
    else:
        folder = Path(tempfile.gettempdir()) / "lmc-console-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"console-{name}.png"))
