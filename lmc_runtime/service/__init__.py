"""``lmc serve``: lmc-runtime as a sandboxed, authenticated HTTP and WebSocket service.

Import :func:`create_app` to embed the service in another ASGI server; the
``lmc serve`` command runs it under uvicorn. The web stack is imported on first
use, so the rest of the ``lmc`` command stays quick to start; without the
``[serve]`` extra that first use raises :class:`~lmc_runtime.errors.MissingExtra`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import MissingExtra

if TYPE_CHECKING:
    from .app import create_app
    from .settings import ServiceSettings

__all__ = ["ServiceSettings", "create_app"]


#: The top-level packages of the ``[serve]`` extra that the service imports.
_SERVE_PACKAGES = frozenset(
    {
        "fastapi",
        "starlette",
        "uvicorn",
        "websockets",
        "h11",
        "prometheus_client",
        "swagger_ui_bundle",
    }
)


def __getattr__(name: str) -> Any:
    try:
        if name == "create_app":
            from .app import create_app

            return create_app
        if name == "ServiceSettings":
            from .settings import ServiceSettings

            return ServiceSettings
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in _SERVE_PACKAGES:
            raise
        raise MissingExtra("lmc_runtime.service", "serve", missing=exc.name) from exc
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
