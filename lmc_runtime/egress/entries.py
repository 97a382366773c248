"""The entries of an egress policy, and which addresses are internal.

An entry is one of:

* a domain name, ``pypi.org``: that name only;
* a wildcard, ``*.pythonhosted.org``: any name below it, not the name itself;
* ``*``: any name (never an address: IP literals need an address entry);
* an IPv4 or IPv6 address, ``203.0.113.7``, ``2001:db8::1``;
* a network, ``10.0.0.0/8``, ``2001:db8::/32`` (no host bits set);

each with an optional port: ``pypi.org:443``, ``10.0.0.0/8:5432``,
``[2001:db8::1]:443`` (an IPv6 address or network takes one only in brackets).
Names are compared in lowercase without a final dot. Anything else is a
:class:`~lmc_runtime.service.errors.BadNetworkPolicy` naming the entry.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Literal

from .errors import BadNetworkPolicy

__all__ = [
    "Address",
    "Entry",
    "Network",
    "embedded_ipv4",
    "is_internal",
    "normalize_name",
    "parse_entry",
]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
#: A host name: labels of letters, digits, '-' (and '_', which real DNS names
#: carry); the last label is not all digits (``1.2.3`` is no name).
_NAME = re.compile(rf"(?:{_LABEL}\.)*(?=[a-z0-9_-]*[a-z_-])[a-z0-9_-]{{1,63}}")
_PORT = re.compile(r"[0-9]{1,5}")

#: IPv6 prefixes that carry an IPv4 address in their last 32 bits (NAT64).
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
#: The IPv4-compatible form ``::a.b.c.d`` (deprecated, still routed by some stacks).
_COMPATIBLE = ipaddress.IPv6Network("::/96")


def normalize_name(name: str) -> str | None:
    """``name`` in lowercase without its final dot, or None if it is no host name."""
    text = name.lower()
    if text.endswith("."):
        text = text[:-1]
    if len(text) > 253 or not _NAME.fullmatch(text):
        return None
    return text


def embedded_ipv4(address: Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries: v4-mapped, v4-compatible,
    6to4, Teredo (server and client) and NAT64 forms."""
    if isinstance(address, ipaddress.IPv4Address):
        return []
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    last = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if any(address in net for net in _NAT64) or (address in _COMPATIBLE and int(address) > 1):
        found.append(last)
    return found


def is_internal(address: Address, host: frozenset[Address] = frozenset()) -> bool:
    """Whether ``address`` is not globally routable, carries such an IPv4 address,
    or is one of the host's own (``host``)."""
    candidates: list[Address] = [address, *embedded_ipv4(address)]
    if isinstance(address, ipaddress.IPv6Address) and (
        address.ipv4_mapped is not None or any(address in net for net in _NAT64)
    ):
        candidates = candidates[1:]  # the IPv4 address it stands for, not ::/8's "reserved"
    return any(_special(one) or one in host for one in candidates)


def _special(address: Address) -> bool:
    # is_global alone misses multicast (224.0.0.1 is "global" to ipaddress)
    return (
        not address.is_global
        or address.is_multicast
        or address.is_loopback
        or address.is_link_local
        or address.is_unspecified
        or address.is_reserved
    )


@dataclass(frozen=True)
class Entry:
    """One entry; ``text`` is how it was written."""

    kind: Literal["any", "name", "wildcard", "network"]
    text: str
    #: The name, or for a wildcard the suffix below which it matches.
    name: str | None = None
    network: Network | None = None
    port: int | None = None

    def port_matches(self, port: int | None, *, strict: bool = False) -> bool:
        """Whether this entry holds for ``port``. ``None``: some port (any
        entry holds), or with ``strict``, every port (only an entry without one)."""
        if self.port is None:
            return True
        return port == self.port or (port is None and not strict)

    def matches_name(self, name: str, port: int | None, *, strict: bool = False) -> bool:
        """Whether this entry names ``name`` (normalized) at ``port``."""
        if not self.port_matches(port, strict=strict):
            return False
        if self.kind == "any":
            return True
        if self.kind == "name":
            return name == self.name
        if self.kind == "wildcard":
            return name.endswith("." + str(self.name))
        return False

    def matches_address(self, address: Address, port: int | None, *, strict: bool = False) -> bool:
        """Whether this entry's network holds ``address`` (or an IPv4 address it carries)."""
        if self.network is None or not self.port_matches(port, strict=strict):
            return False
        return any(one in self.network for one in (address, *embedded_ipv4(address)))

    def names_internal(self, address: Address, port: int | None) -> bool:
        """Whether this entry lists ``address`` explicitly enough to reach it though
        it is internal: the entry is that address, or a network wholly inside one
        of the non-global ranges (``10.0.0.0/8`` is; ``0.0.0.0/0`` is not)."""
        if not self.matches_address(address, port):
            return False
        network = self.network
        assert network is not None
        if network.num_addresses == 1:
            return True
        ends = (network.network_address, network.broadcast_address)
        return all(_special(end) for end in ends) and network.prefixlen >= _NARROW[network.version]

    def covers(self, other: Entry) -> bool:
        """Whether everything ``other`` allows, this entry allows (see
        :func:`~lmc_runtime.egress.policy.narrow`)."""
        if self.port is not None and other.port != self.port:
            return False
        if self.kind == "any":
            return other.kind != "network"
        if other.kind == "name" and other.name is not None:
            return self.matches_name(other.name, other.port or 0)
        if other.kind == "wildcard" and self.kind == "wildcard":
            return other.name == self.name or str(other.name).endswith("." + str(self.name))
        if other.kind == "network" and self.network is not None and other.network is not None:
            same = self.network.version == other.network.version
            return same and other.network.subnet_of(self.network)  # type: ignore[arg-type]
        return False


#: The shortest prefix of a network that counts as naming internal addresses.
_NARROW = {4: 8, 6: 7}


def _bad(text: str, why: str) -> BadNetworkPolicy:
    return BadNetworkPolicy(f"network entry {text!r}: {why}")


def _port(text: str, raw: str) -> int:
    if not _PORT.fullmatch(raw) or not 1 <= int(raw) <= 65535:
        raise _bad(text, f"{raw!r} is not a port (1 to 65535)")
    return int(raw)


def _network(text: str, host: str) -> Network | None:
    if not re.fullmatch(r"[0-9a-fA-F:./]+", host) or not re.search(r"[.:]", host):
        return None
    try:
        return ipaddress.ip_network(host, strict=True)
    except ValueError as exc:
        if "/" in host or re.fullmatch(r"[0-9.]+", host) or ":" in host:
            raise _bad(text, str(exc)) from None
        return None


def parse_entry(raw: object) -> Entry:
    """The entry ``raw`` writes; :class:`BadNetworkPolicy` naming it if it is malformed."""
    if not isinstance(raw, str):
        raise BadNetworkPolicy(f"network entry {raw!r}: not a string")
    text = raw.strip()
    if not text or len(text) > 300:
        raise _bad(raw, "empty" if not text else "too long")
    host, port = text, None
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or ":" not in inside:
            raise _bad(text, "an IPv6 address in brackets, [2001:db8::1] or [2001:db8::1]:443")
        host = inside
        if rest:
            if not rest.startswith(":"):
                raise _bad(text, "only ':PORT' may follow ']'")
            port = _port(text, rest[1:])
    elif text.count(":") == 1:
        host, _, tail = text.partition(":")
        port = _port(text, tail)
    network = _network(text, host)
    if network is not None:
        return Entry("network", text, network=network, port=port)
    if text.startswith("[") or ":" in host:
        raise _bad(text, "not an IPv6 address or network")
    if host == "*":
        return Entry("any", text, port=port)
    wildcard = host.startswith("*.")
    name = normalize_name(host[2:] if wildcard else host)
    if name is None:
        raise _bad(text, "not a domain name, an address or a network")
    return Entry("wildcard" if wildcard else "name", text, name=name, port=port)
