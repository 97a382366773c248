"""A sandbox's id and tokens: bearer capabilities, made and compared safely.

E2B's SDK sends the API key only to the control plane; what it sends with a
sandbox's own traffic is the sandbox id (and an access token when the sandbox
was made with ``secure=True``). So an id is a secret: 160 random bits, in
lowercase base32 (it is a DNS label in ``<port>-<id>.<domain>``), never logged
whole (:func:`shown`), and compared in constant time (:func:`same`).
"""

from __future__ import annotations

import base64
import hmac
import re
import secrets

__all__ = ["SANDBOX_ID", "new_sandbox_id", "new_token", "same", "shown"]

#: What a sandbox id looks like: 32 characters of lowercase base32.
SANDBOX_ID = re.compile(r"[a-z2-7]{32}")


def new_sandbox_id() -> str:
    """A new sandbox id: 160 random bits."""
    return base64.b32encode(secrets.token_bytes(20)).decode().lower()


def new_token() -> str:
    """A new access token (for envd and the sandbox's traffic): 256 random bits."""
    return secrets.token_urlsafe(32)


def same(given: str | None, expected: str) -> bool:
    """Whether ``given`` is ``expected``, in time that does not depend on where they differ."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def shown(sandbox_id: str) -> str:
    """How logs name a sandbox: enough to tell it apart, too little to reach it."""
    return f"{sandbox_id[:6]}…"
