"""``/ui/frame``: the document HTML output is shown in, with a policy of its own.

A ``srcdoc`` frame inherits the console's Content-Security-Policy, under which
no inline script runs, so a plot's own script (plotly's, bokeh's) would do
nothing. HTML output goes instead into a frame of ``/ui/frame``, a small page
whose policy starts with ``sandbox allow-scripts``: whatever loads it (the
console's ``<iframe sandbox="allow-scripts">``, or a tab opened on it), it has
an opaque origin, so its scripts cannot reach the console's DOM, its
``sessionStorage`` or the token, and, without ``allow-top-navigation``,
``allow-popups`` or ``allow-forms``, cannot navigate the console's page, open
a window or post a form. Its scripts may run inline (and use ``eval``, as some
plotting libraries do), but may fetch nothing: ``connect-src`` and every other
source is ``'none'``, images and fonts come from ``data:`` and ``blob:`` only.

The page waits for one message from the frame's parent, the HTML to show, and
writes it in place of itself; then it tells the parent its height, which the
console clamps. Nothing else it could send is heeded.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

__all__ = ["FRAME_CSP", "FRAME_PAGE", "frame_router"]

FRAME_CSP = "; ".join(
    [
        "sandbox allow-scripts",
        "default-src 'none'",
        "script-src 'unsafe-inline' 'unsafe-eval'",
        "style-src 'unsafe-inline'",
        "img-src data: blob:",
        "font-src data:",
        "media-src data: blob:",
        "frame-ancestors 'self'",
        "base-uri 'none'",
        "form-action 'none'",
    ]
)

#: The frame's page: it shows the first string its parent posts, then reports
#: its height to the parent whenever it changes.
FRAME_PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>HTML output</title></head><body><script>
(function () {
  "use strict";
  var shown = false;
  function report() {
    var root = document.documentElement;  // its own height, not the frame's
    var height = root ? Math.ceil(root.getBoundingClientRect().height) : 0;
    parent.postMessage({ lmcFrameHeight: height }, "*");
  }
  function show(event) {
    if (shown || event.source !== parent || typeof event.data !== "string") return;
    shown = true;
    removeEventListener("message", show);
    document.open();
    document.write("<!doctype html>" + event.data);  // standards mode, as a notebook's page
    document.close();
    if (typeof ResizeObserver === "function" && document.documentElement) {
      new ResizeObserver(report).observe(document.documentElement);
    }
    setTimeout(report, 0);
  }
  addEventListener("message", show);
})();
</script></body></html>
"""

_HEADERS = {
    "Content-Security-Policy": FRAME_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def frame_router() -> APIRouter:
    """The route of ``/ui/frame`` (no token: the page holds nothing)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/ui/frame")
    async def html_frame() -> Response:
        return Response(FRAME_PAGE, media_type="text/html; charset=utf-8", headers=_HEADERS)

    return router
