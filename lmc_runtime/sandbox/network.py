"""Network access for a session: the internet, not the host.

A session without network access has bwrap's own empty network namespace. A
session with it gets a namespace of its own too, set up by the ``_netns.py``
helper that runs in place of bwrap: slirp4netns carries its traffic through
sockets in the host's namespace, and a firewall inside the namespace (where the
sandboxed code has no capability) rejects what is addressed to the host
itself. What stays out of reach:

* the host's loopback services, the lmc API among them: loopback inside is the
  namespace's own, and slirp4netns's alias for the host's loopback (10.0.2.2)
  is off (``--disable-host-loopback``) and rejected;
* the host's own addresses (every local and broadcast address in the host's
  routing table when the process starts) and link-local ones (169.254.0.0/16,
  where cloud metadata services answer);
* the host's abstract unix sockets (they belong to the host's namespace);
* IPv6 entirely (only the namespace's loopback).

Requirements: ``slirp4netns``, ``iptables`` and a ``/dev/net/tun`` that the
server's user may open (Debian makes it mode 0666; some containers keep it
root-only). When the server runs as root, slirp4netns also runs in a mount
namespace of its own without capabilities (``--enable-sandbox``).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..backends.base import Availability
from ..egress.local import host_addresses
from ..errors import SandboxUnavailable
from .bwrap import probe_problem

__all__ = [
    "NETNS_HELPER",
    "NetworkTools",
    "blocked_networks",
    "find_network_tools",
    "find_programs",
    "host_addresses",
    "install_host_firewall",
    "netns_command",
    "network_available",
    "require_network_tools",
    "required",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: The helper that sets up the namespace and starts bwrap in it (stdlib only).
NETNS_HELPER = Path(__file__).with_name("_netns.py")

#: The tun device slirp4netns opens inside the namespace.
TUN_DEVICE = Path("/dev/net/tun")

#: Always rejected: "this host", loopback, link-local, and slirp4netns's host alias.
_ALWAYS_BLOCKED = ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "10.0.2.2/32")

#: Where iptables lives when the server's PATH (a user's) lacks the sbin folders.
_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")


@dataclass(frozen=True)
class NetworkTools:
    """The programs the helper runs, as absolute paths."""

    slirp4netns: str
    iptables_restore: str
    ip6tables_restore: str


def _which(name: str) -> str | None:
    found = shutil.which(name)
    if found is None:
        found = shutil.which(name, path=os.pathsep.join(_SBIN))
    return os.path.abspath(found) if found else None


def find_programs(*names: str) -> list[str] | None:
    """The absolute paths of the programs ``names`` (looked for in PATH, then in
    the sbin folders), or None if one is missing."""
    paths = [_which(name) for name in names]
    return None if None in paths else [str(path) for path in paths]


def required(tools: T | None, problem: str) -> T:
    """``tools``, found; else :class:`~lmc_runtime.errors.SandboxUnavailable`
    saying ``problem`` (what is missing, and how to install it)."""
    if tools is None:
        raise SandboxUnavailable(problem)
    return tools


def find_network_tools() -> NetworkTools | None:
    """slirp4netns and the iptables loaders, or None if one is missing."""
    paths = find_programs("slirp4netns", "iptables-restore", "ip6tables-restore")
    return None if paths is None else NetworkTools(*paths)


def require_network_tools() -> NetworkTools:
    """The tools, or :class:`~lmc_runtime.errors.SandboxUnavailable` naming what is missing."""
    return required(
        find_network_tools(),
        "network access needs slirp4netns and iptables (apt-get install slirp4netns iptables)",
    )


def tun_usable() -> bool:
    """Whether sessions can open the tun device: a root server runs them as
    unprivileged uids of their own, so there it must be open to everyone."""
    if os.geteuid() == 0:
        try:
            mode = TUN_DEVICE.stat().st_mode
        except OSError:
            return False
        return mode & 0o006 == 0o006
    return os.access(TUN_DEVICE, os.R_OK | os.W_OK)


def blocked_networks(addresses: list[str] | None = None) -> list[str]:
    """The IPv4 networks a session's namespace rejects: the fixed ones and the host's own."""
    networks = [ipaddress.ip_network(cidr) for cidr in _ALWAYS_BLOCKED]
    for address in host_addresses() if addresses is None else addresses:
        network = ipaddress.ip_network(address)
        if not any(network.subnet_of(kept) for kept in networks):  # type: ignore[arg-type]
            networks.append(network)
    return [str(network) for network in networks]


def netns_command(tools: NetworkTools, *, bwrap_env: bool = True) -> list[str]:
    """The helper's command line up to (not including) ``--`` and bwrap's."""
    argv = [sys.executable, "-I", "-S", str(NETNS_HELPER)]
    argv += ["--slirp4netns", tools.slirp4netns]
    argv += ["--iptables-restore", tools.iptables_restore]
    argv += ["--ip6tables-restore", tools.ip6tables_restore]
    for cidr in blocked_networks():
        argv += ["--block", cidr]
    if bwrap_env:
        argv.append("--bwrap-env")
    return argv


def host_firewall_rule(first: int, count: int) -> list[str]:
    """The host's OUTPUT rule for the sandboxes' uids: nothing to the host's own
    addresses (loopback included). Only slirp4netns opens sockets on the host as
    those uids; this contains it should the code inside ever take it over."""
    owner = f"{first}-{first + count - 1}"
    match = ["-m", "owner", "--uid-owner", owner, "-m", "addrtype", "--dst-type", "LOCAL"]
    return ["OUTPUT", *match, "-j", "REJECT"]


def install_host_firewall(first: int, count: int) -> None:
    """Add :func:`host_firewall_rule` to the host's IPv4 and IPv6 firewalls unless
    it is there (root only). It stays after the server ends: it only concerns
    uids reserved for sandboxes. Raises :class:`SandboxUnavailable` on failure."""
    rule = host_firewall_rule(first, count)
    for name in ("iptables", "ip6tables"):
        program = _which(name)
        if program is None:
            raise SandboxUnavailable(f"{name} is not installed (apt-get install iptables)")
        check = subprocess.run([program, "-w", "-C", *rule], capture_output=True, check=False)
        if check.returncode == 0:
            continue
        added = subprocess.run([program, "-w", "-A", *rule], capture_output=True, check=False)
        if added.returncode != 0:
            reason = added.stderr.decode("utf-8", "replace").strip()
            raise SandboxUnavailable(f"{name} could not add the sandboxes' rule: {reason}")
        logger.info("added to the host's %s: %s", name, " ".join(rule))


def network_available() -> Availability:
    """Whether sessions can get network access here, and if not, why."""
    tools = find_network_tools()
    if tools is None:
        return Availability.no(
            "slirp4netns or iptables is not installed "
            "(apt-get install slirp4netns iptables; `lmc setup` does it)"
        )
    if not tun_usable():
        who = "every session's uid" if os.geteuid() == 0 else f"this user (uid {os.geteuid()})"
        return Availability.no(
            f"{TUN_DEVICE} cannot be opened by {who}; "
            f"make it mode 0666 as Debian does (chmod 0666 {TUN_DEVICE})"
        )
    probe = [*netns_command(tools, bwrap_env=False), "--", "/bin/true"]
    problem = probe_problem(probe, timeout=60)
    if problem is not None:
        return Availability.no(f"a network namespace cannot be set up here ({problem})")
    return Availability.yes()
