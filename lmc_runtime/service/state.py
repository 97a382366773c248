"""What the routes share: the settings, the session manager, the authenticator
and the metrics."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import HTTPConnection

from ..sandbox.policy import shown_network
from ..web.auth import Authenticator
from .manager import SessionManager
from .metrics import ServiceMetrics
from .models import SessionInfo
from .session import ServiceSession
from .settings import ServiceSettings

__all__ = ["Service", "info", "service_of"]


@dataclass
class Service:
    """One running service; kept in ``app.state.service``."""

    settings: ServiceSettings
    manager: SessionManager
    auth: Authenticator
    metrics: ServiceMetrics


def service_of(connection: HTTPConnection) -> Service:
    """The service that ``connection`` reached."""
    service = connection.app.state.service
    assert isinstance(service, Service)
    return service


def info(session: ServiceSession, *, with_usage: bool = False) -> SessionInfo:
    """The API view of ``session``."""
    return SessionInfo(
        id=session.id,
        languages=session.languages,
        network=shown_network(session.policy.network),
        limits=session.limits,
        state=session.state,  # type: ignore[arg-type]
        created_at=session.created_at,
        last_active=session.last_active,
        pooled=session.pooled,
        sandboxed=session.sandboxed,
        cwd=session.cwd,
        title=session.title,
        env=sorted(session.policy.env),
        usage=session.usage() if with_usage else None,
        environment=environment.name if (environment := session.policy.environment) else None,
    )
