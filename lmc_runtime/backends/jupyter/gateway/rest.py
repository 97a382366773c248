"""A Jupyter gateway's REST API (Kernel Gateway, Enterprise Gateway), over httpx.

Every failure is a :class:`~lmc_runtime.errors.GatewayError` that says what
went wrong in one line: the gateway could not be reached, refused the token,
or answered a request with an error status (``status`` carries it).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import anyio

from ....errors import GatewayError, MissingExtra

__all__ = ["TOKEN_VARIABLE", "URL_VARIABLE", "Gateway", "GatewayClient"]

#: The environment variables ``Computer`` reads when no gateway is given.
URL_VARIABLE, TOKEN_VARIABLE = "LMC_GATEWAY_URL", "LMC_GATEWAY_TOKEN"

logger = logging.getLogger(__name__)

#: How long one REST request may take (a kernel's start is bounded separately).
_REQUEST_BOUND = 10.0
#: How long a shutdown of a kernel may take, tries again included.
_SHUTDOWN_BOUND = 5.0


@dataclass(frozen=True)
class Gateway:
    """Where Jupyter kernels run: a gateway at ``url`` (``http(s)://host:port[/base]``).

    ``token`` is sent as ``Authorization: token ...`` on every request and on the
    channels' WebSocket. ``env``: variables each kernel gets at start (None: the
    session's own ``env``). ``reconnect``: how long a dropped channels connection
    is tried again before its kernel counts as lost. ``quick_ack``: acknowledge
    the channels' frames at once (Linux), so a gateway that writes them without
    ``TCP_NODELAY`` does not hold each one back for a delayed ACK.
    """

    url: str
    token: str | None = None
    env: Mapping[str, str] | None = None
    reconnect: float = 10.0
    quick_ack: bool = True

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"a gateway URL is http(s)://host:port, not {self.url!r}")

    @classmethod
    def chosen(cls, url: str | None, token: str | None) -> Gateway | None:
        """The gateway of ``url`` and ``token``, else of ``LMC_GATEWAY_URL``/``_TOKEN``."""
        if url is None:
            url = os.environ.get(URL_VARIABLE) or None
            token = token if token is not None else os.environ.get(TOKEN_VARIABLE) or None
        return cls(url.rstrip("/"), token) if url else None

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"} if self.token else {}

    def channels_url(self, kernel_id: str, session: str) -> str:
        """The kernel's channels WebSocket; ``session`` lets the gateway replay what
        it buffered while a connection of the same session was down."""
        parts = urlsplit(self.url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        path = f"{parts.path.rstrip('/')}/api/kernels/{quote(kernel_id)}/channels"
        return urlunsplit((scheme, parts.netloc, path, f"session_id={quote(session)}", ""))


class GatewayClient:
    """The REST calls a kernel's life needs, on one connection pool."""

    def __init__(self, gateway: Gateway) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise MissingExtra("kernels on a Jupyter gateway", "gateway", missing=exc.name) from exc
        self.gateway = gateway
        self._httpx = httpx
        self._client = httpx.AsyncClient(
            base_url=gateway.url, headers=gateway.headers, timeout=_REQUEST_BOUND
        )

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        """The JSON answer of ``method path``; GatewayError for any failure."""
        where = f"the Jupyter gateway at {self.gateway.url}"
        try:
            response = await self._client.request(method, path, json=body)
        except self._httpx.TransportError as exc:
            reason = str(exc) or type(exc).__name__
            raise GatewayError(f"{where} cannot be reached: {reason}") from exc
        status = response.status_code
        reason = _reason(response.text)
        if status in (401, 403) and reason.lower() in ("", "unauthorized", "forbidden"):
            raise GatewayError(f"{where} refused the token (HTTP {status})", status=status)
        if status >= 400:  # a 403 with a reason of its own (Enterprise Gateway's users)
            reason = reason or response.reason_phrase
            raise GatewayError(
                f"{where} answered {method} {path} with HTTP {status}: {reason}", status=status
            )
        return response.json() if response.content else None

    async def kernel_name(self, language: str) -> str:
        """The gateway's kernelspec for ``language``: its default if that is one."""
        answer = await self._call("GET", "/api/kernelspecs")
        specs: dict[str, Any] = answer.get("kernelspecs") or {}
        fits = sorted(
            name
            for name, found in specs.items()
            if str((found.get("spec") or {}).get("language", "")).lower() == language
        )
        if not fits:
            raise GatewayError(
                f"the Jupyter gateway at {self.gateway.url} has no {language} kernelspec "
                f"(it has {', '.join(sorted(specs)) or 'none'})"
            )
        default = answer.get("default")
        return default if default in fits else fits[0]

    async def start_kernel(self, name: str) -> str:
        """Start a kernel of kernelspec ``name``; its id."""
        answer = await self._call("POST", "/api/kernels", {"name": name})
        return str(answer["id"])

    async def state(self, kernel_id: str) -> str | None:
        """The kernel's ``execution_state``, or None once the gateway no longer has it."""
        try:
            answer = await self._call("GET", f"/api/kernels/{quote(kernel_id)}")
        except GatewayError as exc:
            if exc.status == 404:
                return None
            raise
        return str(answer.get("execution_state", "unknown"))

    async def interrupt(self, kernel_id: str) -> None:
        await self._call("POST", f"/api/kernels/{quote(kernel_id)}/interrupt")

    async def delete(self, kernel_id: str) -> None:
        """Shut the kernel down; one that is already gone is fine."""
        try:
            await self._call("DELETE", f"/api/kernels/{quote(kernel_id)}")
        except GatewayError as exc:
            if exc.status != 404:
                raise

    async def shut_down(self, kernel_id: str) -> None:
        """Delete the kernel, trying again (within a bound) while the gateway fails to
        (a kernel it is restarting answers with HTTP 500); failures are logged."""
        delay = 0.1
        with anyio.move_on_after(_SHUTDOWN_BOUND) as scope:
            while True:
                try:
                    await self.delete(kernel_id)
                    return
                except GatewayError as exc:
                    if exc.status is None or exc.status < 500:
                        logger.warning("shutting kernel %s down failed: %s", kernel_id, exc)
                        return
                await anyio.sleep(delay)  # the backoff between tries
                delay = min(delay * 2, 1.0)
        if scope.cancelled_caught:
            logger.warning("kernel %s was not shut down within %g s", kernel_id, _SHUTDOWN_BOUND)

    async def aclose(self) -> None:
        await self._client.aclose()


def _reason(text: str) -> str:
    """The ``message`` or ``reason`` of a gateway's JSON error body, if it has one."""
    try:
        body = json.loads(text)
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    return str(body.get("message") or body.get("reason") or "")
