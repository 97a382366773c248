"""What the egress parts know of the host itself: its own addresses, and where
its distribution keeps the bundle of the system's CAs."""

from __future__ import annotations

import ipaddress
import logging
import time
from pathlib import Path

from .entries import Address

__all__ = ["SYSTEM_BUNDLES", "host_addresses", "own_addresses"]

logger = logging.getLogger(__name__)

#: Where distributions keep the bundle of the system's CAs (a session that trusts
#: the egress CA sees a bundle with it there, in place of the host's).
SYSTEM_BUNDLES: tuple[str, ...] = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu, Alpine, Arch
    "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora, RHEL
    "/etc/ssl/ca-bundle.pem",  # openSUSE
    "/etc/ssl/cert.pem",
)


def host_addresses(fib_trie: Path = Path("/proc/net/fib_trie")) -> list[str]:
    """The host's own IPv4 addresses (local and broadcast), from its routing tables."""
    found: list[str] = []
    try:
        lines = fib_trie.read_text(encoding="ascii").splitlines()
    except OSError as exc:
        logger.warning("cannot read %s: %s", fib_trie, exc)
        return found
    last = ""
    for line in lines:
        text = line.strip()
        if text.startswith("|--"):
            last = text[3:].strip()
        elif text.startswith("/32") and text.split()[-1] in ("LOCAL", "BROADCAST") and last:
            found.append(last)
    return list(dict.fromkeys(found))


#: Seconds the host's addresses are taken as known before they are read again:
#: a host gains addresses as it runs (a new DHCP lease, IPv6 temporary addresses).
REFRESH = 2.0
_known: tuple[float, frozenset[Address]] | None = None


def own_addresses() -> frozenset[Address]:
    """The host's own addresses: IPv4 from its routing tables, IPv6 from its
    interfaces; read again when the last reading is :data:`REFRESH` seconds old."""
    global _known
    now = time.monotonic()
    if _known is None or now - _known[0] >= REFRESH:
        _known = (now, _read_own_addresses())
    return _known[1]


def _read_own_addresses() -> frozenset[Address]:
    found: set[Address] = {ipaddress.ip_address(text) for text in host_addresses()}
    try:
        lines = Path("/proc/net/if_inet6").read_text(encoding="ascii").splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split()
        if fields and len(fields[0]) == 32:
            found.add(ipaddress.IPv6Address(int(fields[0], 16)))
    return frozenset(found)
