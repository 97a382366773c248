"""Session ids of replicas behind a balancer.

A replica started with ``--replica NAME`` gives its sessions ids
``NAME-<16 hex>``; a balancer routes every ``/v1/sessions/<id>`` request to the
replica the id names (``examples/deploy/haproxy.cfg``). A server that is no
replica keeps plain ``<16 hex>`` ids.
"""

from __future__ import annotations

import re
import secrets

__all__ = ["issued_by", "new_session_id", "replica_of"]

#: A session id: 16 hex digits, after "<replica>-" when the server is a replica.
_SESSION_ID = re.compile(r"(?:(?P<replica>[a-z0-9-]+)-)?[0-9a-f]{16}")


def new_session_id(replica: str | None) -> str:
    """A new session id: ``<replica>-<16 hex>``, or 16 hex digits without a replica."""
    token = secrets.token_hex(8)
    return f"{replica}-{token}" if replica else token


def replica_of(session_id: str) -> str | None:
    """The replica named in ``session_id``, or None (not a replica's id)."""
    match = _SESSION_ID.fullmatch(session_id)
    return match.group("replica") if match else None


def issued_by(session_id: str, replica: str | None) -> bool:
    """Whether ``session_id`` has the form of the ids ``replica`` gives (never
    for None: a server that is no replica cannot tell its ids from others)."""
    return replica is not None and replica_of(session_id) == replica
