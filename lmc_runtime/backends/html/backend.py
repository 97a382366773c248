"""The HTML backend: the markup back as ``code``/``html``, then a screenshot.

An assistant's ``code``/``html`` message is answered in two parts: a computer
``code``/``html`` message carrying the markup, for a UI to display; then an
``image``/``base64.png`` rendered by headless Chromium. Without Chromium the
first part still comes, with a note that no screenshot was made.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

import anyio
from anyio.abc import TaskGroup

from ... import replies
from ...media.browser import find_chromium, screenshot_page
from ...messages import Message
from ..base import Availability, ExecutionOptions, SessionSettings

__all__ = ["NO_CHROMIUM", "HtmlBackend", "HtmlSession"]

#: The note when there is no Chromium to render with.
NO_CHROMIUM = (
    "No screenshot was made: Chromium was not found (apt-get install chromium). "
    "The HTML above is all there is."
)


class HtmlSession:
    """Renders each execution's HTML with a fresh Chromium; one at a time."""

    def __init__(
        self,
        settings: SessionSettings,
        chromium: str | None,
        *,
        window: tuple[int, int],
        render_timeout: float,
    ) -> None:
        self.settings = settings
        self.launch = settings.launch()
        self.chromium = chromium
        self.window = window
        self.render_timeout = render_timeout
        self._busy = anyio.Semaphore(1)  # a Lock would tie it to one task
        self._stop: anyio.Event | None = None

    async def execute(self, code: str, options: ExecutionOptions) -> AsyncIterator[Message]:
        # Each step of a sync caller's iteration may run in another task.
        await self._busy.acquire()
        try:
            async with contextlib.aclosing(self._render(code, options)) as messages:
                async for message in messages:
                    yield message
        finally:
            self._busy.release()

    async def _render(self, code: str, options: ExecutionOptions) -> AsyncGenerator[Message, None]:
        reply_to = options.reply_to
        yield replies.html(code, reply_to)
        if self.chromium is None:
            yield replies.notice(NO_CHROMIUM, "unavailable", reply_to)
            yield replies.active_line(None, reply_to, status="ok", screenshot=False)
            return
        timeout = self.render_timeout
        if options.timeout is not None:
            timeout = min(timeout, options.timeout)
        self._stop = stop = anyio.Event()
        try:
            shot = await screenshot_page(
                self.launch, self.chromium, code, self.window, timeout=timeout, stop=stop
            )
        finally:
            self._stop = None
        if shot.png is not None:
            data = base64.b64encode(shot.png).decode("ascii")
            yield replies.image(data, "image/png", reply_to)
            yield replies.active_line(None, reply_to, status="ok", screenshot=True)
            return
        yield replies.notice(f"No screenshot was made: {shot.problem}.", shot.status, reply_to)
        # Nothing persists between renders: a failed one loses no state.
        yield replies.active_line(
            None, reply_to, status=shot.status, screenshot=False, state_lost=False
        )

    async def interrupt(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def restart(self) -> None:
        """Nothing persists between renders; a running one is stopped."""
        await self.interrupt()

    async def aclose(self) -> None:
        await self.interrupt()


class HtmlBackend:
    """Always available; screenshots need Chromium.

    ``chromium`` names the browser to run (a name on PATH or a path); by
    default the first of ``chromium``, ``chromium-browser``, ``google-chrome``
    found. ``window`` is the viewport in pixels; ``render_timeout`` bounds a
    render when the execution has no shorter timeout.
    """

    def __init__(
        self,
        *,
        chromium: str | None = None,
        window: tuple[int, int] = (1024, 768),
        render_timeout: float = 30.0,
    ) -> None:
        self.chromium = chromium
        self.window = window
        self.render_timeout = render_timeout

    def availability(self) -> Availability:
        return Availability.yes()

    def find_chromium(self) -> str | None:
        """The Chromium this backend would run, or None."""
        return find_chromium(self.chromium)

    async def start(self, task_group: TaskGroup, settings: SessionSettings) -> HtmlSession:
        settings.work_dir.mkdir(parents=True, exist_ok=True)
        return HtmlSession(
            settings,
            self.find_chromium(),
            window=self.window,
            render_timeout=self.render_timeout,
        )
