"""ASGI middleware that handles one type of scope and lets every other pass."""

from __future__ import annotations

from typing import ClassVar

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ScopedMiddleware"]


class ScopedMiddleware:
    """Wraps ``app``: a scope of type :attr:`handles` (``"http"``, ``"lifespan"``...)
    goes to :meth:`handle`; any other goes on to ``app`` as it came."""

    handles: ClassVar[str]

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == self.handles:
            await self.handle(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a scope of type :attr:`handles` (``self.app`` is what it wraps)."""
        raise NotImplementedError
