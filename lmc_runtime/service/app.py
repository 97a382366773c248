"""The FastAPI application of ``lmc serve``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI, Request

from .. import __version__
from ..store import JanThreadStore
from .auth import Authenticator
from .drain import Drain
from .files import files_router
from .manager import SessionManager
from .models import Health
from .problems import install_handlers
from .routes import sessions_router
from .settings import ServiceSettings
from .state import Service, service_of
from .transcript import Transcripts
from .ws import ws_router

__all__ = ["create_app"]

logger = logging.getLogger(__name__)


def create_app(settings: ServiceSettings) -> FastAPI:
    """A new application for ``settings``; its sessions live as long as its lifespan."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    transcripts = Transcripts(JanThreadStore(settings.data_dir))
    service = Service(
        settings=settings,
        manager=SessionManager(settings, transcripts),
        auth=Authenticator(
            settings.token,
            enabled=not settings.no_auth,
            allowed_origins=settings.allowed_origins,
        ),
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        manager = service.manager
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(manager.run)
                logger.info("lmc serve ready: %d pooled sessions wanted", settings.pool_size)
                try:
                    yield
                finally:
                    with anyio.CancelScope(shield=True):
                        await manager.shutdown()
                    tg.cancel_scope.cancel()
        finally:
            await transcripts.aclose()
            logger.info("lmc serve stopped; every session closed")

    app = FastAPI(
        title="lmc-runtime",
        summary="Sandboxed code execution for LLM agents, in LMC messages.",
        version=__version__,
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.drain = Drain()
    install_handlers(app)

    @app.get("/healthz")
    async def healthz(request: Request) -> Health:
        manager = service_of(request).manager
        return Health(
            status="shutting_down" if manager.shutting_down else "ok",
            sessions=len(manager.sessions),
            pool_ready=manager.pool.ready_count,
        )

    app.include_router(sessions_router())
    app.include_router(files_router())
    app.include_router(ws_router())
    return app
