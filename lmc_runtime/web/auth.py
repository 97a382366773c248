"""Bearer-token authentication for HTTP and WebSocket, and the WebSocket Origin check."""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from ..errors import HostNotAllowed, OriginNotAllowed, TokenRejected
from .sockets import is_loopback

__all__ = [
    "TOKEN_SUBPROTOCOL_PREFIX",
    "Authenticator",
    "bearer_from_header",
    "check_token_rules",
    "host_is_loopback",
    "origin_allowed",
    "token_from_subprotocols",
]

#: A browser cannot set headers on a WebSocket; it may offer ``lmc.token.<token>``
#: as a subprotocol instead (the server answers with the plain ``lmc`` one).
TOKEN_SUBPROTOCOL_PREFIX = "lmc.token."


def bearer_from_header(value: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def token_from_subprotocols(offered: Iterable[str]) -> str | None:
    """The token carried in an ``lmc.token.<token>`` subprotocol, or None."""
    for protocol in offered:
        if protocol.startswith(TOKEN_SUBPROTOCOL_PREFIX):
            return protocol[len(TOKEN_SUBPROTOCOL_PREFIX) :]
    return None


def origin_allowed(origin: str | None, host: str | None, allowed: Iterable[str]) -> bool:
    """Whether a WebSocket from ``origin`` may connect.

    No Origin header (a program, not a browser) is allowed; otherwise the
    origin must be in ``allowed`` or be this server itself (same host and port
    as the ``Host`` header).
    """
    if origin is None:
        return True
    normalized = origin.strip().rstrip("/").lower()
    if normalized in {o.strip().rstrip("/").lower() for o in allowed}:
        return True
    if host is None or normalized == "null":
        return False
    origin_netloc = _origin_netloc(normalized)
    if origin_netloc is None:
        return False
    default_port = "443" if normalized.startswith("https:") else "80"
    host_l = host.strip().lower()
    host_netloc = host_l if ":" in host_l.rsplit("]", 1)[-1] else f"{host_l}:{default_port}"
    return secrets.compare_digest(origin_netloc.encode(), host_netloc.encode())


def _origin_netloc(origin: str) -> str | None:
    """``host:port`` of a well-formed http(s) origin, or None for anything else
    (a port out of range or not a number, no host, user info, a path)."""
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if "@" in parts.netloc or parts.path or parts.query or parts.fragment:
        return None
    if port is None:
        if parts.netloc.endswith(":"):
            return None
        port = 443 if parts.scheme == "https" else 80
    host = parts.netloc.rsplit(":", 1)[0] if parts.port is not None else parts.netloc
    return f"{host}:{port}"


def check_token_rules(host: str, token: str | None, *, no_auth: bool) -> None:
    """The rules of a door's token (``lmc serve``, ``lmc mcp --http``): a token,
    unless ``no_auth``, which only a loopback ``host`` may serve; ValueError if not."""
    if no_auth and not is_loopback(host):
        raise ValueError(f"--no-auth is only allowed on a loopback address, not on {host!r}")
    if not no_auth and not token:
        raise ValueError("a token is required unless --no-auth is given")


def host_is_loopback(host: str | None) -> bool:
    """Whether a ``Host`` header names this machine's loopback (``localhost``,
    127.0.0.0/8, ``[::1]``), with any port.

    Without a token this is what stops DNS rebinding: a web page whose name
    re-resolves to 127.0.0.1 still sends its own name as the Host.
    """
    if not host:
        return False
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    if name in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Authenticator:
    """Checks a request's token against the configured one, in constant time."""

    def __init__(
        self, token: str | None, *, enabled: bool = True, allowed_origins: Iterable[str] = ()
    ) -> None:
        if enabled and not token:
            raise ValueError("authentication needs a token")
        self._token = (token or "").encode()
        self.enabled = enabled
        self.allowed_origins = tuple(allowed_origins)

    def check_browser(self, headers: Mapping[str, str]) -> None:
        """Refuse a request a web page made on its own (:class:`OriginNotAllowed`,
        :class:`HostNotAllowed`).

        A browser's Origin must be allowed (this server, or one configured); and
        without a token the Host must be a loopback name, so that a page that
        rebinds its DNS name to 127.0.0.1 cannot drive the service.
        """
        origin = headers.get("origin")
        host = headers.get("host")
        if not origin_allowed(origin, host, self.allowed_origins):
            raise OriginNotAllowed(origin)
        if not self.enabled and host is not None and not host_is_loopback(host):
            raise HostNotAllowed(host)

    def valid(self, candidate: str | None) -> bool:
        """Whether ``candidate`` is the token (always True with auth disabled)."""
        if not self.enabled:
            return True
        if candidate is None:
            return False
        return secrets.compare_digest(candidate.encode(), self._token)

    def check_http(self, headers: Mapping[str, str]) -> None:
        """Raise :class:`TokenRejected` unless the request carries the token (and
        refuse a request a web page made on its own, see :meth:`check_browser`)."""
        self.check_browser(headers)
        if not self.enabled:
            return
        token = bearer_from_header(headers.get("authorization"))
        if token is None:
            raise TokenRejected("missing bearer token (Authorization: Bearer ...)")
        if not self.valid(token):
            raise TokenRejected("invalid bearer token")

    def websocket_token(
        self, headers: Mapping[str, str], query: Mapping[str, str], offered: Iterable[str]
    ) -> str | None:
        """The token a WebSocket handshake carries: header, ``?token=`` or subprotocol."""
        return (
            bearer_from_header(headers.get("authorization"))
            or query.get("token")
            or token_from_subprotocols(offered)
        )
