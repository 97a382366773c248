"""Network namespaces for the test internet, made and removed with ``ip``.

Each namespace is joined to the host by a veth pair: the host's end has the
subnet's ``.1``, the namespace's end (``eth0``) the addresses of its servers,
and its default route goes back through the host. Names carry the pid of the
process that made them, so that namespaces left by a run that died are found
and removed by the next.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import shutil
import signal
import subprocess

__all__ = [
    "PREFIX",
    "add_namespace",
    "free_subnet",
    "netns_problem",
    "remove_namespace",
    "remove_stale",
    "stale",
]

logger = logging.getLogger(__name__)

#: The prefix of every namespace (and host interface) the test internet makes.
PREFIX = "lmcti"


def _ip(*args: str, check: bool = True) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def netns_problem() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "the test internet needs root (ip netns, veth pairs)"
    if shutil.which("ip") is None:
        return "the test internet needs iproute2's ip"
    probe = f"{PREFIX}-{os.getpid()}-probe"
    try:
        _ip("netns", "add", probe)
    except RuntimeError as exc:
        return f"ip netns is unavailable here: {exc}"
    _ip("netns", "del", probe, check=False)
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_namespace(name: str) -> None:
    """Kill what runs in namespace ``name``, then delete it (and so its veth pair)."""
    for pid in _ip("netns", "pids", name, check=False).split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    _ip("netns", "del", name, check=False)


def stale(name: str) -> bool:
    """Whether ``name`` is one of ours, made by a process that is gone."""
    parts = name.split("-")
    if len(parts) < 3 or parts[0] != PREFIX or not parts[1].isdigit():
        return False
    return not _alive(int(parts[1]))


def remove_stale() -> None:
    """Remove the namespaces of earlier runs whose process is gone."""
    for line in _ip("netns", "list", check=False).splitlines():
        name = line.split()[0] if line.split() else ""
        if stale(name):
            logger.info("removing the stale namespace %s", name)
            remove_namespace(name)


def free_subnet(base: str, start: int) -> ipaddress.IPv4Network:
    """A ``base.X.0/24`` that no route or address of the host mentions yet."""
    used = _ip("-4", "route", "show", "table", "all") + _ip("-4", "addr")
    for step in range(256):
        third = (start + step) % 256
        prefix = f"{base}.{third}."
        if prefix not in used:
            return ipaddress.IPv4Network(f"{prefix}0/24")
    raise RuntimeError(f"no free {base}.X.0/24 subnet")


def add_namespace(name: str, host_if: str, subnet: ipaddress.IPv4Network, inner: list[str]) -> str:
    """Make namespace ``name`` joined to the host on ``subnet``, its end holding
    the ``inner`` addresses; returns the host end's address."""
    host = str(subnet.network_address + 1)
    _ip("netns", "add", name)
    try:
        _ip("link", "add", host_if, "type", "veth", "peer", "name", "eth0", "netns", name)
        _ip("addr", "add", f"{host}/{subnet.prefixlen}", "dev", host_if)
        _ip("link", "set", host_if, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        for address in inner:
            _ip("-n", name, "addr", "add", f"{address}/{subnet.prefixlen}", "dev", "eth0")
        _ip("-n", name, "link", "set", "eth0", "up")
        _ip("-n", name, "route", "add", "default", "via", host)
    except RuntimeError:
        remove_namespace(name)
        raise
    return host
