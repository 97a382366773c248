"""E2B's network options as an lmc session's ``network``.

E2B's ``allowInternetAccess`` and ``network: {allowOut, denyOut}`` read: a
connection is allowed if it matches ``allowOut``; else refused if it matches
``denyOut``; else allowed. ``allowInternetAccess: false`` is ``denyOut:
["0.0.0.0/0"]``. lmc's egress policy is an allow list where deny wins, so:

* everything denied (``allowInternetAccess: false`` or ``0.0.0.0/0`` in
  ``denyOut``): ``allowOut`` becomes the policy's allow list (none: no network);
* some addresses denied: the server's ceiling (or any name) minus ``denyOut``,
  refused with 400 when an ``allowOut`` address lies inside a denied network
  (E2B would let it through; deny wins here);
* nothing denied: ``allowOut`` restricts nothing, so the session gets what it
  asked for with ``allowInternetAccess``.

The server's own settings (``--allow-network``, its ceiling) then apply as to
any session: a policy beyond the ceiling is refused (403).
"""

from __future__ import annotations

import ipaddress

from .errors import E2BError

__all__ = ["session_network"]

_EVERYTHING = ("0.0.0.0/0", "::/0")


def _network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return None


def session_network(
    allow_internet: bool | None,
    allow_out: list[str] | None,
    deny_out: list[str] | None,
    server_allows: bool,
) -> bool | dict[str, list[str]] | None:
    """The session's ``network`` for E2B's options (None: the server's default)."""
    allow, deny = list(allow_out or []), list(deny_out or [])
    if allow_internet is False or any(entry in _EVERYTHING for entry in deny):
        return {"allow": allow} if allow else False
    if not deny:
        # E2B's SDKs ask for the internet unless told otherwise: a sandbox gets it
        # as far as the server allows (the server's default when it allows none).
        if allow_internet is None:
            return None
        return allow_internet and server_allows
    denied = [(entry, _network(entry)) for entry in deny]
    for entry, network in denied:
        if network is None:
            raise E2BError(f"denyOut takes addresses and networks, not {entry!r}", 400)
    for entry in allow:
        allowed = _network(entry)
        inside = allowed is not None and any(
            n is not None and n.version == allowed.version and allowed.subnet_of(n)  # type: ignore[arg-type]
            for _, n in denied
        )
        if inside:
            raise E2BError(
                f"allowOut entry {entry!r} lies inside a denyOut network: here a denied "
                "network stays denied; list only what to deny, or deny everything and "
                "list what to allow",
                400,
            )
    return {"deny": deny}
