"""Signed file URLs: ``Sandbox.download_url()`` and ``upload_url()`` of a
``secure=True`` sandbox carry a signature in place of its access token, so that
a browser or ``curl`` can use them as they are.

The signature is E2B's v1: ``v1_`` and the unpadded base64 of the SHA-256 of
``path:operation:user:token`` (and ``:expiration`` when it expires), the
operation ``read`` for a download and ``write`` for an upload. Only a holder of
the sandbox's token can make one; it is compared in constant time, and one past
its expiration is refused.

With ``E2B_SANDBOX_URL`` such a URL names no sandbox (no header, no host name):
the sandbox is then the one whose token makes the signature, looked for among
the live secure sandboxes (a few dozen at the most, one hash each).
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterable
from urllib.parse import parse_qs

from .errors import E2BError
from .ids import same
from .registry import E2BSandbox

__all__ = ["FILES_PATH", "signed", "signer_of"]

#: envd's files route, the only one a signature opens.
FILES_PATH = "/files"

_OPERATIONS = {"GET": "read", "POST": "write"}


def _signature(path: str, operation: str, user: str, token: str, expiration: str | None) -> str:
    raw = f"{path}:{operation}:{user}:{token}"
    if expiration is not None:
        raw += f":{expiration}"
    digest = hashlib.sha256(raw.encode()).digest()
    return "v1_" + base64.b64encode(digest).rstrip(b"=").decode("ascii")


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values and len(values) == 1 else None


def _unexpired(expiration: str) -> bool:
    """Whether ``expiration`` (epoch seconds, ASCII digits: ``int`` would take
    other scripts' digits, and fail on a superscript or 5,000 digits) is to come."""
    usable = expiration.isascii() and expiration.isdigit() and len(expiration) <= 18
    return usable and int(expiration) >= time.time()


def signed(method: str, path: str, query_string: bytes, token: str) -> bool:
    """Whether a request to ``path`` carries a valid signature made with
    ``token`` for what it does (a download or an upload); :class:`E2BError` (401)
    if it is valid but has expired."""
    operation = _OPERATIONS.get(method)
    if path != FILES_PATH or operation is None:
        return False
    query = parse_qs(query_string.decode("latin-1"), keep_blank_values=True)
    given = _one(query, "signature")
    file_path = _one(query, "path")
    user = _one(query, "username")
    if given is None or file_path is None or ("username" in query and user is None):
        return False
    expiration = _one(query, "signature_expiration")
    expected = _signature(file_path, operation, user or "", token, expiration)
    if not same(given, expected):
        return False
    if expiration is not None and not _unexpired(expiration):
        # envd's own words, which E2B's SDKs and tests read.
        raise E2BError("signature is already expired", 401)
    return True


def signer_of(
    sandboxes: Iterable[E2BSandbox], method: str, path: str, query_string: bytes
) -> E2BSandbox | None:
    """The live secure sandbox whose token signed this files request, if any."""
    if path != FILES_PATH or b"signature=" not in query_string:
        return None
    for sandbox in sandboxes:
        token = sandbox.access_token
        if token is not None and signed(method, path, query_string, token):
            return sandbox
    return None
