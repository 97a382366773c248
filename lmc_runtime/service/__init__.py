"""``lmc serve``: lmc-runtime as a sandboxed, authenticated HTTP and WebSocket service.

Import :func:`create_app` to embed the service in another ASGI server; the
``lmc serve`` command runs it under uvicorn. The web stack is imported on first
use, so the rest of the ``lmc`` command stays quick to start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app
    from .settings import ServiceSettings

__all__ = ["ServiceSettings", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    if name == "ServiceSettings":
        from .settings import ServiceSettings

        return ServiceSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
