"""What a session may reach: an allow list and a deny list, within the server's ceiling.

A session's ``network`` is ``false`` (no network), ``true`` or
``{"allow": [...], "deny": [...]}`` (entries: see :mod:`.entries`).

The rules the gateway enforces with an :class:`EgressPolicy`:

* **Deny wins.** An entry of ``deny`` that matches refuses, whatever ``allow`` says.
* **Names** (from DNS, a TLS SNI, an HTTP Host, a proxy's ``CONNECT``) need a
  name, wildcard or ``*`` entry of ``allow``. The gateway resolves an allowed
  name itself, and dials only addresses :meth:`EgressPolicy.allows_resolved`
  accepts.
* **Addresses** dialled without a name (IP literals) need an address or network
  entry of ``allow``.
* **Internal addresses** (not globally routable: loopback, private, link-local,
  CGNAT, multicast, unspecified, reserved; IPv6 forms carrying such an IPv4
  address: v4-mapped, v4-compatible, 6to4, Teredo, NAT64; and the host's own
  addresses) are reached only through an entry that names them explicitly: the
  address itself, or a network wholly inside the non-global ranges
  (``10.0.0.0/8``, never ``0.0.0.0/0``). A name never reaches an internal address
  otherwise, whatever its DNS says: this is what defeats DNS rebinding and names
  that resolve to the host.

The server's ceiling (``lmc serve --allow-network LIST``) is an allow list.
:func:`narrow` makes a session's policy under it: a session may narrow it, never
widen it.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .entries import Address, Entry, is_internal, normalize_name, parse_entry
from .errors import BadNetworkPolicy, NetworkNotAllowed
from .local import own_addresses

__all__ = [
    "EgressPolicy",
    "narrow",
    "parse_ceiling",
    "parse_entries",
    "parse_session_network",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EgressPolicy:
    """An allow list and a deny list (deny wins). ``host``: the host's own
    addresses, internal whatever their range (None: :func:`~.local.own_addresses`)."""

    allow: tuple[Entry, ...]
    deny: tuple[Entry, ...] = ()
    host: frozenset[Address] | None = field(default=None, compare=False)

    @property
    def _host(self) -> frozenset[Address]:
        return own_addresses() if self.host is None else self.host

    def allows_name(self, name: str, port: int | None) -> bool:
        """Whether connections to ``name:port`` are allowed (before resolving it).
        ``port`` None: at some port (what the session's DNS asks)."""
        normal = normalize_name(name)
        if normal is None:
            return False
        if any(entry.matches_name(normal, port, strict=True) for entry in self.deny):
            return False
        return any(entry.matches_name(normal, port) for entry in self.allow)

    def _denied(self, address: Address, port: int | None) -> bool:
        return any(entry.matches_address(address, port, strict=True) for entry in self.deny)

    def _named_internal(self, address: Address, port: int | None) -> bool:
        return any(entry.names_internal(address, port) for entry in self.allow)

    def allows_address(self, address: str | Address, port: int) -> bool:
        """Whether ``address:port`` may be dialled without a name (an IP literal)."""
        ip = _address(address)
        if ip is None or self._denied(ip, port):
            return False
        if is_internal(ip, self._host):
            return self._named_internal(ip, port)
        return any(entry.matches_address(ip, port) for entry in self.allow)

    def allows_resolved(self, name: str, address: str | Address, port: int | None) -> bool:
        """Whether an allowed ``name`` may be dialled at ``address`` (one of its
        DNS answers): not denied, and internal only if listed explicitly."""
        ip = _address(address)
        if ip is None or not self.allows_name(name, port) or self._denied(ip, port):
            return False
        return not is_internal(ip, self._host) or self._named_internal(ip, port)

    def describe(self) -> dict[str, list[str]]:
        """The policy as a session request writes it."""
        return {"allow": [e.text for e in self.allow], "deny": [e.text for e in self.deny]}


def _address(value: str | Address) -> Address | None:
    if not isinstance(value, str):
        return value
    try:
        return ipaddress.ip_address(value.partition("%")[0])
    except ValueError:
        return None


def parse_entries(raw: object, what: str) -> tuple[Entry, ...]:
    """A list of entries (``what`` names it in errors: ``allow``, ``deny``)."""
    if not isinstance(raw, list | tuple):
        raise BadNetworkPolicy(f"network.{what} must be a list of entries, not {raw!r}")
    if len(raw) > 1000:
        raise BadNetworkPolicy(f"network.{what} has {len(raw)} entries; at most 1000")
    return tuple(parse_entry(item) for item in raw)


def parse_ceiling(text: str) -> EgressPolicy:
    """The server's ceiling from ``--allow-network``'s comma list."""
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise BadNetworkPolicy("the network ceiling lists no entry")
    return EgressPolicy(allow=parse_entries([p for p in parts if p], "allow"))


def narrow(
    ceiling: EgressPolicy, allow: Iterable[Entry], deny: Iterable[Entry] = ()
) -> EgressPolicy:
    """A session's policy under ``ceiling``: every asked ``allow`` entry must be
    covered by one of the ceiling's, else :class:`NetworkNotAllowed` naming it.

    Covering: a name by the same name, a wildcard above it or ``*``; a wildcard
    by the same or a wider wildcard or ``*``; an address or network by a network
    (or address) of the same family holding it all; a ceiling entry with a port
    covers only entries with that same port. The ceiling's deny entries stay,
    and the session's are added."""
    asked = tuple(allow)
    for entry in asked:
        if not any(limit.covers(entry) for limit in ceiling.allow):
            raise NetworkNotAllowed(
                f"network entry {entry.text!r} is outside what this server allows "
                f"({', '.join(e.text for e in ceiling.allow)})"
            )
    return EgressPolicy(allow=asked, deny=ceiling.deny + tuple(deny), host=ceiling.host)


def parse_session_network(
    value: object, ceiling: EgressPolicy | None, server_allows: bool
) -> bool | EgressPolicy:
    """What a session's ``network`` asks for, within the server's settings.

    ``False``: no network. ``True``: the unrestricted path (everything but the
    host, through slirp4netns). An :class:`EgressPolicy`: the gateway's path.
    ``true`` under a ceiling is the ceiling itself; a mapping without ``allow``
    takes the ceiling's (or any name, ``*``, without a ceiling).
    :class:`NetworkNotAllowed` when the server gives no network or the ceiling
    does not cover an entry; :class:`BadNetworkPolicy` when the value is malformed.
    """
    if value is False or value is None:
        return False
    if not server_allows:
        raise NetworkNotAllowed()
    if value is True:
        return True if ceiling is None else ceiling
    if not isinstance(value, Mapping):
        raise BadNetworkPolicy(f"network must be true, false or {{allow, deny}}, not {value!r}")
    unknown = set(value) - {"allow", "deny"}
    if unknown:
        raise BadNetworkPolicy(f"network takes 'allow' and 'deny', not {sorted(unknown)}")
    deny = parse_entries(value.get("deny", []), "deny")
    if "allow" in value:
        allow = parse_entries(value["allow"], "allow")
    else:
        allow = ceiling.allow if ceiling is not None else (parse_entry("*"),)
    if ceiling is None:
        return EgressPolicy(allow=allow, deny=deny)
    return narrow(ceiling, allow, deny)
