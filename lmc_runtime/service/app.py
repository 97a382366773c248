"""The FastAPI application of ``lmc serve``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

import anyio
import prometheus_client
from anyio.abc import TaskStatus
from fastapi import FastAPI, Request, Response

from .. import __version__
from ..closing import closing_task_group
from ..console import console_router
from ..egress.gateway import EgressGateway
from ..egress.resolver import DnsResolver
from ..errors import MissingExtra, StoreError
from ..store import ThreadStore, open_store
from ..web.auth import Authenticator
from .branch_routes import RollbackRequest, branches_router
from .command import StartRefused
from .drain import Drain
from .events import events_router
from .files import files_router
from .history import MetricsHistory, history_router
from .hot import execute_route
from .manager import SessionManager
from .metrics import ServiceMetrics
from .models import CodeMessage, CreateSession, Health, RestartRequest
from .openapi import install_docs, install_openapi
from .problems import install_handlers
from .routes import languages_router, sessions_router
from .settings import ServiceSettings
from .state import Service, info, service_of
from .transcript import Transcripts
from .transcript_routes import transcripts_router
from .ws import ws_router

__all__ = ["Extension", "Running", "create_app"]

logger = logging.getLogger(__name__)


class Running(Protocol):
    """What an extension keeps running while the application serves."""

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled; ``task_status.started()`` once it serves."""


#: Something that extends the application (see :func:`create_app`).
Extension = Callable[[FastAPI, Service], "Running | None"]


def create_app(settings: ServiceSettings, extensions: Sequence[Extension] = ()) -> FastAPI:
    """A new application for ``settings``; its sessions live as long as its lifespan.

    ``extensions``: each is called with the application and its service once its
    routes are in place (to add routes or middleware: E2B's API is one); what it
    returns, if anything, runs in the application's lifespan."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    transcripts = Transcripts(_open_store(settings))
    manager = SessionManager(settings, transcripts)
    # Read at every scrape (and once now, as the registry describes it).
    metrics = ServiceMetrics(manager.states)
    manager.metrics = metrics
    manager.egress = _egress_gateway(settings, manager)
    service = Service(
        settings=settings,
        manager=manager,
        auth=Authenticator(
            settings.token,
            enabled=not settings.no_auth,
            allowed_origins=settings.allowed_origins,
        ),
        metrics=metrics,
    )
    app = FastAPI(
        title="lmc-runtime",
        summary="Sandboxed code execution for LLM agents, in LMC messages.",
        version=__version__,
        lifespan=_lifespan(service, transcripts),
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = service
    app.state.drain = Drain()
    install_handlers(app)
    install_docs(app, "lmc-runtime")
    _add_health(app)
    _add_metrics(app, service)
    app.include_router(sessions_router())
    app.include_router(branches_router())
    app.include_router(languages_router())
    app.include_router(files_router())
    app.include_router(ws_router())
    app.include_router(events_router())
    app.include_router(transcripts_router())
    manager.events.describe = lambda session: info(session).model_dump(mode="json")
    app.include_router(console_router())
    app.state.metrics_history = MetricsHistory(metrics, manager.states)
    app.include_router(history_router())
    # Every run comes through it: first, before FastAPI's routes (see .hot).
    app.router.routes.insert(0, execute_route())
    install_openapi(app, (CreateSession, CodeMessage, RestartRequest, RollbackRequest))
    app.state.extensions = [app.state.metrics_history] + [
        running for extend in extensions if (running := extend(app, service)) is not None
    ]
    return app


def _egress_gateway(settings: ServiceSettings, manager: SessionManager) -> EgressGateway:
    """The server's egress gateway: it asks ``--egress-dns`` (else the host's
    resolver), and hands connections the secrets broker wants to it."""
    resolver = DnsResolver(settings.egress_dns) if settings.egress_dns is not None else None
    broker = manager.secrets.broker if manager.secrets is not None else None
    return EgressGateway(resolver, interceptor=broker)


def _open_store(settings: ServiceSettings) -> ThreadStore:
    """The transcripts' store ``settings.store`` names; StartRefused, in one line
    and without a password, when it is unknown, cannot be reached or lacks its extra."""
    try:
        store = open_store(
            settings.store, settings.data_dir, group_commit=settings.transcript_sync == "group"
        )
    except (StoreError, MissingExtra) as exc:
        raise StartRefused(f"--store: {exc}") from exc
    where = repr(store) if settings.store else f"the Jan folder {settings.data_dir / 'threads'}"
    logger.info("transcripts go to %s", where)
    return store


def _lifespan(
    service: Service, transcripts: Transcripts
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The application's lifespan: the manager runs in it, and every session is
    closed when it ends."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        manager = service.manager
        try:
            async with closing_task_group(manager.shutdown) as tg:
                await tg.start(manager.run)
                for extension in app.state.extensions:
                    await tg.start(extension.run)
                tg.start_soon(transcripts.keep_trying)
                logger.info(
                    "lmc serve ready: %d pooled sessions wanted", service.settings.pool_size
                )
                yield
        finally:
            if manager.egress is not None:  # the sessions have let it go; this is what is left
                await manager.egress.aclose()
            await transcripts.aclose()
            logger.info("lmc serve stopped; every session closed")

    return lifespan


def _add_health(app: FastAPI) -> None:
    @app.get("/healthz")
    async def healthz(request: Request) -> Health:
        manager = service_of(request).manager
        return Health(
            status="shutting_down" if manager.shutting_down else "ok",
            sessions=len(manager.sessions),
            pool_ready=manager.pools.ready_count,
            transcripts_held=manager.transcripts.held,
        )


def _add_metrics(app: FastAPI, service: Service) -> None:
    public = service.settings.metrics_public

    @app.get(
        "/metrics",
        response_class=Response,
        responses={200: {"content": {prometheus_client.CONTENT_TYPE_LATEST: {}}}},
        openapi_extra=None if public else {"security": [{"bearerAuth": []}]},
    )
    async def metrics(request: Request) -> Response:
        """The service's figures in the Prometheus text format (the bearer token
        is needed unless the server was started with public metrics)."""
        if not public:
            service.auth.check_http(request.headers)
        body = prometheus_client.generate_latest(service.metrics.registry)
        return Response(body, media_type=prometheus_client.CONTENT_TYPE_LATEST)
