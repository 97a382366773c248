"""The warm pools of a server: one for the default policy, and one for each
environment that sessions have asked for since the server started.

A session is served from a pool when it asks for nothing but what the pool's
sessions were made with: the default policy, or the default policy in another
environment (an environment's sessions are never forked from the server's fork
server, so a warm one saves the most). Sessions with a policy of their own
(limits, network, variables, secrets) or a working folder start cold.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import replace
from typing import Any

from ..egress.policy import parse_session_network
from ..sandbox import SandboxPolicy
from .demand import Demand
from .pool import Pool
from .session import ServiceSession
from .session_request import session_environment
from .settings import ServiceSettings

__all__ = ["Pools", "default_policy", "pool_maker"]

logger = logging.getLogger(__name__)

#: At most this many environments get a pool of their own (the first asked for).
MAX_ENVIRONMENT_POOLS = 8


def default_policy(settings: ServiceSettings) -> SandboxPolicy:
    """What a session asking for nothing runs under, as the default pool's do:
    with a ceiling, the default network is the ceiling's policy."""
    network = parse_session_network(
        settings.network_default, settings.network_ceiling, settings.allow_network
    )
    environment = session_environment(settings, None)
    return SandboxPolicy(network=network, limits=settings.limits, environment=environment)


def pool_maker(
    settings: ServiceSettings,
    parallel: int,
    start: Callable[[SandboxPolicy], Awaitable[ServiceSession]],
    room: Callable[[], bool],
) -> Callable[[SandboxPolicy], Pool]:
    """Makes the pool of a policy: its demand from ``settings`` (each pool has
    the configured floor and ceiling), ``start(policy)`` to start a warm session."""

    def make(policy: SandboxPolicy) -> Pool:
        demand = Demand(
            settings.pool_size,
            settings.pool_ceiling,
            parallel=parallel,
            cooldown=settings.pool_cooldown,
        )

        async def start_one() -> ServiceSession:
            return await start(policy)

        return Pool(demand, start_one, room)

    return make


class Pools:
    """``default``: the default policy's pool; :meth:`for_policy` finds (or makes,
    once the server runs) the pool of a session's policy. ``make(policy)`` makes
    a pool of warm sessions under ``policy``; ``spawn(pool.run)``, set while the
    server runs, starts one."""

    def __init__(
        self, default_policy: SandboxPolicy, make: Callable[[SandboxPolicy], Pool]
    ) -> None:
        self.default_policy = default_policy
        self._make = make
        self.default = make(default_policy)
        self._by_environment: dict[str, tuple[SandboxPolicy, Pool]] = {}
        self.spawn: Callable[[Callable[[], Coroutine[Any, Any, None]]], object] | None = None

    def __iter__(self) -> Iterator[Pool]:
        yield self.default
        yield from [pool for _, pool in list(self._by_environment.values())]

    @property
    def ready_count(self) -> int:
        return sum(pool.ready_count for pool in self)

    @property
    def starting(self) -> int:
        return sum(pool.starting for pool in self)

    def for_policy(self, policy: SandboxPolicy, cwd: str) -> Pool | None:
        """The pool whose warm sessions fit a session under ``policy`` in ``cwd``, or None."""
        if cwd:
            return None
        if policy == self.default_policy:
            return self.default
        environment = policy.environment
        if environment is None or policy != replace(self.default_policy, environment=environment):
            return None
        kept = self._by_environment.get(environment.name)
        if kept is not None:
            made_for, pool = kept
            if made_for == policy:
                return pool
            # The environment was made again under its name: its old warm sessions go.
            for session in pool.drain():
                session.stop("its environment was made again")
            del self._by_environment[environment.name]
        if self.spawn is None or len(self._by_environment) >= MAX_ENVIRONMENT_POOLS:
            return None
        pool = self._make(policy)
        self._by_environment[environment.name] = (policy, pool)
        self.spawn(pool.run)
        logger.info("pool: keeping warm sessions of the environment %r", environment.name)
        return pool

    def wake(self) -> None:
        for pool in self:
            pool.wake()

    def drain(self) -> list[ServiceSession]:
        """Every warm session of every pool (for shutdown); no more are started."""
        return [session for pool in self for session in pool.drain()]
