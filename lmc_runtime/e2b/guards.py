"""What the E2B door's router checks of a request before any of its apps sees
it: its sandbox headers said once (two that disagree are a smuggling attempt,
not a choice to make), a port that is a port, the Host it names, a web page's
Origin and a DNS-rebinding Host (the lmc API's rules, :mod:`..web.auth`), and a
control-plane body within the server's ``max_request_bytes``."""

from __future__ import annotations

import re

from starlette.types import Message, Receive, Scope

from ..errors import HostNotAllowed, OriginNotAllowed
from ..service.errors import RequestTooLarge
from ..service.problems import problem_for
from ..web.auth import Authenticator, host_is_loopback, origin_allowed
from .errors import E2BError

__all__ = ["browser_check", "buffered_body", "header", "host_of", "port_of"]

#: A port, as E2B's SDKs write one: ASCII digits, no sign, no padding.
_PORT = re.compile(r"[1-9][0-9]{0,4}")


def _refusal(exc: Exception) -> E2BError:
    """``exc`` as the lmc API answers it (same status, same sentence)."""
    problem = problem_for(exc)
    assert problem is not None
    return E2BError(problem.message, problem.status)


def header(scope: Scope, name: bytes, shown: str) -> str | None:
    """The value of header ``name`` (lowercase), or None; a 400 if it is sent
    more than once with values that differ (a proxy and this server could each
    read another one)."""
    found = {bytes(value) for key, value in scope["headers"] if key == name}
    if len(found) > 1:
        raise E2BError(f"the {shown} header was sent more than once, with different values", 400)
    return found.pop().decode("latin-1") if found else None


def port_of(text: str) -> int:
    """The port ``text`` names (``E2b-Sandbox-Port``); a 400 if it is not one."""
    if not _PORT.fullmatch(text) or int(text) > 65535:
        raise E2BError(f"E2b-Sandbox-Port must be a port number, not {text[:20]!r}", 400)
    return int(text)


def host_of(scope: Scope) -> str:
    """The name the request's Host header gives (lowercase, without its port or a
    final dot), or ''."""
    host = (header(scope, b"host", "Host") or "").strip().lower()
    if host.startswith("["):
        host = host.partition("]")[0] + "]"
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    return host.removesuffix(".")


def browser_check(auth: Authenticator, scope: Scope, *, own_host: bool) -> None:
    """Refuse what the lmc API refuses of a web page: an Origin that is not this
    server nor allowed; and, without a token, a Host that is neither a loopback
    name nor one of the server's own (``own_host``): a page whose DNS name was
    rebound to 127.0.0.1 sends its own."""
    host = header(scope, b"host", "Host")
    origin = header(scope, b"origin", "Origin")
    if not origin_allowed(origin, host, auth.allowed_origins):
        raise _refusal(OriginNotAllowed(origin[:200] if origin else origin))
    if not auth.enabled and host is not None and not (own_host or host_is_loopback(host)):
        raise _refusal(HostNotAllowed(host[:200]))


async def buffered_body(scope: Scope, receive: Receive, limit: int) -> Receive:
    """Read the request's body, refusing it (413) as soon as it passes ``limit``
    bytes, declared or sent; what replays it to the app."""
    declared = header(scope, b"content-length", "Content-Length")
    if declared and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise _refusal(RequestTooLarge("request body", limit))
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if size > limit:
            raise _refusal(RequestTooLarge("request body", limit))
        if not message.get("more_body", False):
            break

    async def replay() -> Message:
        if messages:
            return messages.pop(0)
        return await receive()

    return replay
