"""The network namespace of a session under an egress policy: its helper's
command line, its tools, and whether it can be set up here.

The helper (``_egressns.py``) runs in place of bwrap, as ``_netns.py`` does for
a session with the whole network; see its docstring for the namespace and its
firewall. Requirements: ``ip`` (iproute2) and ``iptables`` with its ``nat``
table usable inside a network namespace.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..backends.base import Availability
from ..egress.handover import EgressAttacher, Handover
from ..errors import SandboxUnavailable
from .network import find_programs, required

__all__ = [
    "EGRESS_HELPER",
    "PROXY_ENV",
    "EgressTools",
    "egress_available",
    "egress_netns_command",
    "find_egress_tools",
    "require_egress_tools",
    "session_handover",
]

#: The helper that sets up the namespace and starts bwrap in it (stdlib only).
EGRESS_HELPER = Path(__file__).with_name("_egressns.py")

#: The explicit proxy inside a policy session's namespace (``_egressns.PROXY_PORT``).
_PROXY = "http://127.0.0.1:3128"
#: What a policy session's processes are told about it: pip, curl and requests
#: honour them; whatever does not still goes through the transparent listener.
PROXY_ENV = {
    "HTTP_PROXY": _PROXY,
    "HTTPS_PROXY": _PROXY,
    "http_proxy": _PROXY,
    "https_proxy": _PROXY,
    "NO_PROXY": "localhost,127.0.0.1",
    "no_proxy": "localhost,127.0.0.1",
}

_HELLO = b"lmc-egress-sockets 1"

if TYPE_CHECKING:
    from ..egress.policy import EgressPolicy


class _Session(Protocol):
    enabled: bool

    @property
    def owner(self) -> tuple[int, int] | None: ...


@dataclass(frozen=True)
class EgressTools:
    """The programs the helper runs, as absolute paths."""

    ip: str
    iptables_restore: str
    ip6tables_restore: str


def find_egress_tools() -> EgressTools | None:
    """``ip`` and the iptables loaders, or None if one is missing."""
    paths = find_programs("ip", "iptables-restore", "ip6tables-restore")
    return None if paths is None else EgressTools(*paths)


def require_egress_tools() -> EgressTools:
    """The tools, or :class:`~lmc_runtime.errors.SandboxUnavailable` naming what is missing."""
    return required(
        find_egress_tools(),
        "an egress policy needs ip and iptables (apt-get install iproute2 iptables)",
    )


def egress_netns_command(
    tools: EgressTools, handover: Path, *, bwrap_env: bool = True
) -> list[str]:
    """The helper's command line up to (not including) ``--`` and bwrap's."""
    argv = [sys.executable, "-I", "-S", str(EGRESS_HELPER)]
    argv += ["--ip", tools.ip]
    argv += ["--iptables-restore", tools.iptables_restore]
    argv += ["--ip6tables-restore", tools.ip6tables_restore]
    argv += ["--handover", str(handover)]
    if bwrap_env:
        argv.append("--bwrap-env")
    return argv


def _answer_once(listener: socket.socket, found: list[str]) -> None:
    """Take one handover on ``listener``: four sockets, answered ``ok``."""
    try:
        conn, _ = listener.accept()
    except OSError as exc:
        found.append(f"the helper never connected: {exc}")
        return
    with conn:
        conn.settimeout(30)
        try:
            data, fds, _, _ = socket.recv_fds(conn, 256, 8)
        except OSError as exc:
            found.append(f"no sockets handed over: {exc}")
            return
        for fd in fds:
            os.close(fd)
        if data != _HELLO or len(fds) != 4:
            found.append(f"a handover of {len(fds)} descriptors")
        with contextlib.suppress(OSError):
            conn.send(b"ok" if not found else b"no")


def egress_available() -> Availability:
    """Whether sessions can run under an egress policy here, and if not, why:
    the helper sets up a namespace and hands its sockets over to a probe."""
    tools = find_egress_tools()
    if tools is None:
        return Availability.no(
            "ip or iptables is not installed (apt-get install iproute2 iptables)"
        )
    with tempfile.TemporaryDirectory(prefix="lmc-egress-probe-") as folder:
        path = Path(folder, "handover.sock")
        found: list[str] = []
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(str(path))
            listener.listen(1)
            listener.settimeout(60)
            taker = threading.Thread(target=_answer_once, args=(listener, found), daemon=True)
            taker.start()
            probe = [*egress_netns_command(tools, path, bwrap_env=False), "--", "/bin/true"]
            try:
                done = subprocess.run(probe, capture_output=True, timeout=60, check=False)
            except subprocess.TimeoutExpired:
                return Availability.no("setting up an egress namespace took over 60 s")
            listener.close()
            taker.join(5)
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").strip() or f"status {done.returncode}"
            return Availability.no(f"an egress namespace cannot be set up here ({reason})")
        if found:
            return Availability.no(f"an egress namespace cannot be set up here ({found[0]})")
    return Availability.yes()


def session_handover(
    root: Path, network: bool | EgressPolicy, egress: EgressAttacher | None, session: _Session
) -> Handover | None:
    """Under an egress policy (``network``): the started handover where the
    session's namespaces hand their sockets to ``egress`` (in the session's folder
    ``root``, which the sandbox never sees; only the session's own user, its
    ``owner``, may connect). None without a policy."""
    if isinstance(network, bool):
        return None
    if egress is None or not session.enabled:
        raise SandboxUnavailable(
            "an egress policy needs the sandbox and the server's egress gateway"
        )
    handover = Handover(root / "egress.sock", egress, root.name, network, session.owner)
    handover.start()
    return handover
