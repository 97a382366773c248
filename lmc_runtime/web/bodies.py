"""The JSON body of an error answered before any route: ``{"error": {"code",
"message"}}``, as every error of the HTTP doors is worded."""

from __future__ import annotations

import json

__all__ = ["invalid_http_body"]


def invalid_http_body(reason: str) -> bytes:
    """The JSON error body of a 400 for a request HTTP itself cannot parse (a bad
    header, a broken request line), which the protocol answers before any route."""
    detail = {"code": "bad_request", "message": f"not a valid HTTP request: {reason}"}
    return json.dumps({"error": detail}, ensure_ascii=False, separators=(",", ":")).encode()
