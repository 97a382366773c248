"""The client of a remote ``lmc serve``: :class:`RemoteComputer`, ``Computer``'s API
over HTTP or a WebSocket, and the session's files.

It needs the ``[client]`` extra (``pip install 'lmc-runtime[client]'``: httpx and
websockets); without it, importing this package raises
:class:`~lmc_runtime.errors.MissingExtra`.
"""

from __future__ import annotations

from ..errors import MissingExtra

try:
    import httpx  # noqa: F401  (the [client] extra)
    import websockets  # noqa: F401
except ModuleNotFoundError as exc:
    raise MissingExtra("lmc_runtime.remote", "client", missing=exc.name) from exc

from ..errors import (
    ConnectionLost,
    RemoteBusy,
    RemoteCapacityExceeded,
    RemoteError,
    RemoteFileExists,
    RemoteFileNotFound,
    RemotePathError,
    RemoteSessionEnded,
    RemoteSessionNotFound,
    RemoteTooLarge,
    RemoteUnauthorized,
    RemoteUnavailable,
)
from .computer import RemoteComputer, Transport
from .models import FileInfo, RemoteTimeouts

__all__ = [
    "ConnectionLost",
    "FileInfo",
    "RemoteBusy",
    "RemoteCapacityExceeded",
    "RemoteComputer",
    "RemoteError",
    "RemoteFileExists",
    "RemoteFileNotFound",
    "RemotePathError",
    "RemoteSessionEnded",
    "RemoteSessionNotFound",
    "RemoteTimeouts",
    "RemoteTooLarge",
    "RemoteUnauthorized",
    "RemoteUnavailable",
    "Transport",
]
