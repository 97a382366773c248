"""Java through ``jshell`` on a PTY."""

from __future__ import annotations

from .backend import JavaBackend

__all__ = ["JavaBackend"]
