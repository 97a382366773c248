"""Isolation and limits for one session: bubblewrap, cgroups or rlimits, safe file access.

Every process of a sandboxed session starts through :class:`SandboxLauncher`:
inside ``bwrap`` with new user, PID, IPC, UTS and network namespaces, the
system read-only, a private working directory and ``/tmp``, no capabilities and
only an allowlisted environment. :class:`Sandbox` owns a session's directories,
cgroup (or rlimits) and disk limit, and hands out Computers wired to them.
"""

from __future__ import annotations

from .bwrap import sandbox_available
from .computer import SandboxComputer
from .files import open_in_session
from .launch import SandboxLauncher
from .policy import ENV_ALLOWLIST, SandboxPolicy, SessionLimits
from .sandbox import Sandbox
from .usage import Usage

__all__ = [
    "ENV_ALLOWLIST",
    "Sandbox",
    "SandboxComputer",
    "SandboxLauncher",
    "SandboxPolicy",
    "SessionLimits",
    "Usage",
    "open_in_session",
    "sandbox_available",
]
