"""Listing sandboxes as E2B's ``GET /v2/sandboxes`` (and ``GET /sandboxes``) do:
filtered by metadata (``metadata=k%3Dv%26k2%3Dv2``: the SDKs quote each key and
value, then encode the pairs as a query string of their own), by state
(``state=running,paused``), template and start time, newest first unless
``order=asc``, a page of ``limit`` at a time: the ``X-Next-Token`` header says
where the next page starts (sent back as ``nextToken``).

A page token names a position in the order (a start time and a digest), never a
sandbox id: ids are capabilities (:mod:`.ids`) and tokens end up in URLs and logs.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import urllib.parse
from collections.abc import Iterable
from datetime import datetime

from fastapi import Request
from fastapi.responses import JSONResponse

from .errors import E2BError
from .models import listed
from .registry import E2BSandbox

__all__ = ["listing"]

#: A page's size when ``limit`` is not given, and its largest (E2B's own).
DEFAULT_LIMIT = 100
MAX_LIMIT = 100

_STATES = frozenset({"running", "paused"})


def _position(sandbox: E2BSandbox) -> tuple[float, str]:
    return sandbox.started_at, hashlib.sha256(sandbox.id.encode()).hexdigest()[:24]


def _token(position: tuple[float, str]) -> str:
    return base64.urlsafe_b64encode(f"{position[0]!r}:{position[1]}".encode()).decode()


def _untoken(token: str) -> tuple[float, str]:
    try:
        when, digest = base64.urlsafe_b64decode(token.encode()).decode().split(":", 1)
        return float(when), digest
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise E2BError("nextToken is not a token this server gave", 400) from None


def _metadata(raw: str | None) -> dict[str, str]:
    if not raw:
        return {}
    try:
        pairs = urllib.parse.parse_qsl(raw, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise E2BError("metadata must be a query string: key=value&key2=value2", 400) from None
    return {urllib.parse.unquote(k): urllib.parse.unquote(v) for k, v in pairs}


def _states(raw: str | None) -> frozenset[str]:
    if not raw:
        return _STATES
    asked = frozenset(s.strip() for s in raw.split(",") if s.strip())
    unknown = asked - _STATES
    if unknown:
        raise E2BError(f"state must be running or paused, not {sorted(unknown)[0][:40]!r}", 400)
    return asked


def _limit(raw: str | None) -> int:
    if raw is None or raw == "":
        return DEFAULT_LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise E2BError(f"limit must be a whole number from 1 to {MAX_LIMIT}", 400)
    return int(raw)


def _started_after(raw: str | None) -> float | None:
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise E2BError("startedAfter must be a time in ISO 8601", 400) from None


def _chosen(sandboxes: Iterable[E2BSandbox], request: Request) -> list[E2BSandbox]:
    query = request.query_params
    metadata = _metadata(query.get("metadata"))
    states = _states(query.get("state"))
    after = _started_after(query.get("startedAfter"))
    template = query.get("template")
    return [
        s
        for s in sandboxes
        if s.state in states
        and all(s.metadata.get(k) == v for k, v in metadata.items())
        # "at or after": the time the sandbox's info gave, to the microsecond.
        and (after is None or s.started_at >= after - 1e-6)
        and (not template or s.template == template.split(":", 1)[0])
    ]


def listing(sandboxes: Iterable[E2BSandbox], request: Request, *, paged: bool) -> JSONResponse:
    """The page of ``sandboxes`` that ``request`` asks for (``paged``: the v2 list;
    the first one answers every match at once)."""
    query = request.query_params
    order = query.get("order") or "desc"
    if order not in ("asc", "desc"):
        raise E2BError("order must be asc or desc", 400)
    newest_first = order == "desc"
    chosen = sorted(_chosen(sandboxes, request), key=_position, reverse=newest_first)
    if not paged:
        return JSONResponse([listed(s) for s in chosen])
    token = query.get("nextToken")
    if token:
        start = _untoken(token)
        chosen = [
            s for s in chosen if (_position(s) < start if newest_first else _position(s) > start)
        ]
    limit = _limit(query.get("limit"))
    page, rest = chosen[:limit], chosen[limit:]
    headers = {"X-Next-Token": _token(_position(page[-1]))} if rest else {}
    return JSONResponse([listed(s) for s in page], headers=headers)
