"""``/ui``: the console's page and its assets, every one from this package.

The page holds no secret: the token is typed in and kept in the browser's
``sessionStorage``, sent as a bearer header by the page's own requests (no
cookie, so nothing for another site to forge). Every response carries a strict
Content-Security-Policy: scripts and styles from this origin only, no inline
script, no eval, and no framing of the console by anyone; the page's own
style elements (the editor's) need a nonce made for each load. HTML output is shown
in a frame of ``/ui/frame`` (:mod:`.frame`), sandboxed without ``allow-same-origin``:
an opaque origin with no access to the console's, where the output's own scripts run.
"""

from __future__ import annotations

import gzip
import secrets
from importlib import resources

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from .frame import frame_router

__all__ = ["CSP", "console_router", "page_policy"]

#: Where the page's nonce goes (a meta element the editor reads).
NONCE_MARK = b"__STYLE_NONCE__"


def page_policy(nonce: str) -> str:
    """The policy of the page itself: :data:`CSP`, and style elements with ``nonce``."""
    return CSP.replace("style-src 'self'", f"style-src 'self' 'nonce-{nonce}'")


CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "connect-src 'self'",
        "frame-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "object-src 'none'",
    ]
)

_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
    "Cross-Origin-Opener-Policy": "same-origin",
}

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}


def _assets() -> dict[str, tuple[bytes, bytes, str]]:
    """Every file of the package's ``static`` folder, read and compressed once:
    name -> (body, gzipped body, type)."""
    found: dict[str, tuple[bytes, bytes, str]] = {}
    for entry in resources.files(__package__).joinpath("static").iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in _TYPES:
            body = entry.read_bytes()
            found[entry.name] = (body, gzip.compress(body, 9, mtime=0), _TYPES[suffix])
    return found


def _gzip_accepted(request: Request) -> bool:
    return "gzip" in request.headers.get("accept-encoding", "").lower()


def console_router() -> APIRouter:
    """The routes of ``/ui``; no token needed to load the page (it holds none)."""
    router = APIRouter(include_in_schema=False)
    assets = _assets()
    router.include_router(frame_router())

    @router.get("/ui")
    async def console_root() -> Response:
        return RedirectResponse("/ui/", status_code=308, headers=_HEADERS)

    @router.get("/ui/")
    async def console_page() -> Response:
        body, _, media_type = assets["index.html"]
        nonce = secrets.token_urlsafe(18)
        headers = {**_HEADERS, "Content-Security-Policy": page_policy(nonce)}
        return Response(
            body.replace(NONCE_MARK, nonce.encode()), media_type=media_type, headers=headers
        )

    @router.get("/ui/static/{name}")
    async def console_asset(request: Request, name: str) -> Response:
        found = assets.get(name)
        if found is None:
            raise HTTPException(404, "no such asset")
        body, packed, media_type = found
        headers = {**_HEADERS, "Vary": "Accept-Encoding"}
        if _gzip_accepted(request):
            headers["Content-Encoding"] = "gzip"
            body = packed
        return Response(body, media_type=media_type, headers=headers)

    return router
