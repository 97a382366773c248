"""Shells (bash, sh, zsh) on a PTY, with an out-of-band active line, on the core."""

from __future__ import annotations

from .backend import BashBackend, ShBackend, ShellBackend, ZshBackend

__all__ = ["BashBackend", "ShBackend", "ShellBackend", "ZshBackend"]
