"""Shells (bash, sh, zsh) on a PTY spawned by pexpect, with an out-of-band active line."""

from __future__ import annotations

from .backend import BashBackend, ShBackend, ShellBackend, ZshBackend
from .session import ShellSession

__all__ = ["BashBackend", "ShBackend", "ShellBackend", "ShellSession", "ZshBackend"]
