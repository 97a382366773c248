"""The AppleScript backend: available on macOS, where ``osascript`` lives."""

from __future__ import annotations

import os
import shutil
import sys

from anyio.abc import TaskGroup

from ...errors import BackendUnavailable
from ..base import Availability, SessionSettings
from .session import AppleScriptSession

__all__ = ["NEEDS_MACOS", "AppleScriptBackend"]

#: The reply on any system but macOS.
NEEDS_MACOS = "AppleScript needs macOS (osascript); this machine runs {system}"


class AppleScriptBackend:
    """Runs each AppleScript execution as one ``osascript`` process.

    ``platform`` is ``sys.platform`` unless given; ``path`` is where to look
    for ``osascript`` (the process's PATH unless given). Both are here so the
    macOS path can be exercised anywhere with a stand-in ``osascript``.
    """

    name = "applescript"
    aliases = ("osascript",)

    def __init__(
        self,
        *,
        platform: str | None = None,
        osascript: str = "osascript",
        path: str | None = None,
    ) -> None:
        self.platform = platform if platform is not None else sys.platform
        self.osascript = osascript
        self.path = path

    def find_osascript(self) -> str | None:
        """The ``osascript`` this backend would run, or None."""
        path = self.path if self.path is not None else os.environ.get("PATH", os.defpath)
        return shutil.which(self.osascript, path=path)

    def availability(self) -> Availability:
        if self.platform != "darwin":
            return Availability.no(NEEDS_MACOS.format(system=self.platform))
        if self.find_osascript() is None:
            return Availability.no(f"{self.osascript} was not found on PATH")
        return Availability.yes()

    async def start(self, task_group: TaskGroup, settings: SessionSettings) -> AppleScriptSession:
        availability = self.availability()
        osascript = self.find_osascript()
        if not availability.available or osascript is None:
            raise BackendUnavailable(self.name, availability.reason or "osascript is missing")
        settings.work_dir.mkdir(parents=True, exist_ok=True)
        return AppleScriptSession(osascript, settings, task_group)
