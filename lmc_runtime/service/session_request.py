"""A request for a new session, checked against the server: the sandbox policy
it asks for (within the server's limits and network settings), the languages it
names (known and available here), and its working folder (a plain relative path).
Each check raises the :mod:`~lmc_runtime.errors` error a client is told.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from ..backends.registry import Registry
from ..egress.policy import parse_session_network
from ..environments.store import find_environment
from ..errors import UnsafePath
from ..sandbox import SandboxPolicy, SessionLimits
from ..sandbox.environment import Environment
from ..sandbox.files import safe_parts
from .errors import (
    BadPath,
    LanguageUnavailable,
    LimitTooHigh,
    NetworkNotAllowed,
    UnknownLanguage,
)
from .models import CreateSession
from .settings import ServiceSettings

__all__ = ["checked_cwd", "session_environment", "session_languages", "session_policy"]


def session_policy(settings: ServiceSettings, request: CreateSession) -> SandboxPolicy:
    """The sandbox policy ``request`` asks for: :class:`LimitTooHigh` past the
    server's limits, :class:`NetworkNotAllowed` for network the server refuses
    (or an egress policy beyond its ceiling), :class:`BadNetworkPolicy` for a
    malformed one."""
    ceiling = settings.limits
    asked = request.limits.model_dump(exclude_none=True)
    for key, value in asked.items():
        most = getattr(ceiling, key)
        if most is not None and value > most:
            raise LimitTooHigh(key, most, value)
    limits: SessionLimits = replace(ceiling, **asked)
    asked_network = settings.network_default if request.network is None else request.network
    network = parse_session_network(asked_network, settings.network_ceiling, settings.allow_network)
    if not settings.sandbox and not isinstance(network, bool):
        raise NetworkNotAllowed("an egress policy needs the sandbox, and this server runs none")
    environment = session_environment(settings, request.environment)
    if request.env:
        env = MappingProxyType(dict(request.env))
        return SandboxPolicy(network=network, limits=limits, env=env, environment=environment)
    return SandboxPolicy(network=network, limits=limits, environment=environment)


def session_environment(settings: ServiceSettings, name: str | None) -> Environment | None:
    """The environment ``name`` (None: the server's default, if it has one), read
    from the data directory now: :class:`~.errors.UnknownEnvironment` or
    :class:`~.errors.EnvironmentBroken` saying what is wrong."""
    name = name or settings.environment
    return find_environment(settings.data_dir, name) if name else None


def session_languages(registry: Registry, names: list[str]) -> list[str]:
    """The canonical names of ``names`` (Python when none), once each:
    :class:`UnknownLanguage` or :class:`LanguageUnavailable` otherwise."""
    resolved = []
    for name in names or ["python"]:
        canonical = registry.resolve(name)
        if canonical is None:
            raise UnknownLanguage(name, sorted(registry))
        availability = registry.availability(canonical)
        if not availability.available:
            reason = availability.reason or "it cannot run on this machine"
            raise LanguageUnavailable(canonical, reason)
        if canonical not in resolved:
            resolved.append(canonical)
    return resolved


def checked_cwd(relpath: str) -> str:
    """``relpath`` if it is "" or a plain relative path (the files API's rules);
    else :class:`BadPath`."""
    if not relpath:
        return ""
    try:
        safe_parts(relpath)
    except UnsafePath as exc:
        raise BadPath(relpath, f"cwd: {exc.reason}") from exc
    return relpath
