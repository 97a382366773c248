"""AppleScript, through ``osascript`` on macOS: one process per execution."""

from __future__ import annotations

from .backend import AppleScriptBackend
from .session import AppleScriptSession

__all__ = ["AppleScriptBackend", "AppleScriptSession"]
