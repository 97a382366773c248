"""What a sandboxed session may use: its limits, its network, its environment."""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from ._handoff import SET_PREFIX
from .environment import Environment

if TYPE_CHECKING:
    from ..egress.policy import EgressPolicy

__all__ = [
    "ENV_ALLOWLIST",
    "MINIMUMS",
    "EgressTrust",
    "SandboxPolicy",
    "SessionLimits",
    "session_env",
]

#: Host variables a session may see (shell patterns); nothing else gets in.
ENV_ALLOWLIST: tuple[str, ...] = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "COLORTERM",
    "NO_COLOR",
    "PYTHONIOENCODING",
    "PYTHONUNBUFFERED",
)


#: The least each limit may be: below these a sandboxed Python kernel cannot
#: start (it needs 16 tasks, some 40 MiB, and writes small files as it starts).
MINIMUMS: Mapping[str, float] = MappingProxyType(
    {
        "memory_bytes": 64 << 20,
        "cpu_seconds": 0.1,
        "wall_seconds": 0.1,
        "processes": 24,
        "file_size_bytes": 512,
        "disk_bytes": 1 << 20,
        "output_bytes": 64,
        "cpu_quota": 0.01,
    }
)


def _check(name: str, value: float | None) -> None:
    minimum = MINIMUMS[name]
    if value is not None and not value >= minimum:
        raise ValueError(f"{name} must be at least {minimum:g} or None, got {value!r}")


@dataclass(frozen=True)
class SessionLimits:
    """Resource limits of one session (None: no limit).

    ``memory_bytes`` counts the whole session (kernel and children);
    ``cpu_seconds`` and ``wall_seconds`` are per execution; ``processes`` counts
    every task of the session; ``file_size_bytes`` is the largest single file
    written; ``disk_bytes`` is the disk use of the session's disk (its working
    and shared folders and its saved outputs);
    ``output_bytes`` is the output budget of one execution; ``cpu_quota`` is
    the share of the CPUs the whole session may use at any time, running code
    or not (1.0: one core's worth; it needs a cgroup).
    """

    memory_bytes: int | None = 1 << 30
    cpu_seconds: float | None = 60.0
    wall_seconds: float | None = 300.0
    processes: int | None = 512
    file_size_bytes: int | None = 256 << 20
    disk_bytes: int | None = 512 << 20
    output_bytes: int = 256_000
    cpu_quota: float | None = 1.0

    def __post_init__(self) -> None:
        for name in MINIMUMS:
            _check(name, getattr(self, name))


@dataclass(frozen=True)
class EgressTrust:
    """The server's egress CA (see lmc_runtime.egress.ca) as host files a
    session's sandbox binds read-only: ``ca`` alone, and ``bundle``, the
    system's CAs with it."""

    ca: Path
    bundle: Path


@dataclass(frozen=True)
class SandboxPolicy:
    """Network opt-in, limits and the extra environment of one session.

    ``network``: False (none), True (everything but the host, see
    :mod:`.network`) or an egress policy (what the server's gateway lets
    through, see :mod:`.egress_netns`)."""

    network: bool | EgressPolicy = False
    limits: SessionLimits = field(default_factory=SessionLimits)
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: Host variables passed through (shell patterns).
    env_allowlist: tuple[str, ...] = ENV_ALLOWLIST
    #: The secrets the session asked for, by name: its ``env`` holds their
    #: placeholders (see lmc_runtime.egress.secrets), never their values.
    secrets: tuple[str, ...] = ()
    #: The egress CA the session trusts (its TLS to the secrets' hosts ends there).
    trust: EgressTrust | None = None
    #: What the session's interpreters and packages come from (None: the server's Python).
    environment: Environment | None = None


def shown_network(network: bool | EgressPolicy) -> bool | dict[str, list[str]]:
    """A session's ``network`` as the API and its transcript show it."""
    return network if isinstance(network, bool) else network.describe()


def allowed(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether the host variable ``name`` matches one of ``patterns``."""
    return _matcher(patterns)(name) is not None


@functools.lru_cache(maxsize=16)
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], re.Match[str] | None]:
    """One expression for all of ``patterns`` (``fnmatchcase`` each): a session's
    start filters the host's whole environment through them, twice."""
    if not patterns:
        return lambda name: None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


def session_env(host: Mapping[str, str], policy: SandboxPolicy, work_dir: Path) -> dict[str, str]:
    """The environment a session starts with: allowlisted host variables, a
    private home and temp directory, then the policy's own variables, carried
    under :data:`~._handoff.SET_PREFIX` names until the sandbox's innermost step
    names them (and they replace the others): no process on the host, where
    the loader and interpreters read variables before privileges are dropped,
    has one as the variable it names."""
    env = {name: value for name, value in host.items() if allowed(name, policy.env_allowlist)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(
        HOME=str(work_dir),
        TMPDIR="/tmp",
        MPLCONFIGDIR=str(work_dir / ".config" / "matplotlib"),
    )
    env.update((SET_PREFIX + name, value) for name, value in policy.env.items())
    return env


def fallback_rlimits(
    limits: SessionLimits, controllers: tuple[str, ...], *, own_uid: bool, root: bool
) -> dict[str, int]:
    """The rlimits that hold ``limits`` where the session's cgroup has no
    controller for them (``controllers``): its file size always, its memory
    without a memory controller, its processes without a pids one.

    ``RLIMIT_NPROC`` counts the tasks of a host user: the session's own when it
    has a uid of its own (``own_uid``), else one shared by every session of the
    server; root itself is exempt from it."""
    rlimits: dict[str, int] = {}
    if limits.file_size_bytes is not None:
        rlimits["fsize"] = limits.file_size_bytes
    if limits.memory_bytes is not None and "memory" not in controllers:
        rlimits["data"] = limits.memory_bytes
    if limits.processes is not None and "pids" not in controllers and (own_uid or not root):
        rlimits["nproc"] = limits.processes
    return rlimits
