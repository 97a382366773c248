"""The network namespace of a sandboxed command under an egress policy.

Run as ``python -I -S _egressns.py [options] -- bwrap ... --share-net ...`` in
place of bwrap itself (stdlib only, like ``_netns.py``, whose pieces it reuses).
It unshares a network namespace (and, when not root, a user namespace in which
it is root) that has no way out at all: no slirp4netns, no interface but
loopback. A default route through loopback makes a connection to any address
routable, and the firewall inside (where the sandboxed code has no capability)
sends it to the session's listeners instead:

* every TCP connection not to loopback goes to the transparent listener
  (``SO_ORIGINAL_DST`` gives where it was going);
* every DNS query (UDP or TCP, to any address, on port 53) goes to the DNS
  listeners on 127.0.0.1:53, whatever ``resolv.conf`` names;
* anything else that would leave loopback (UDP, ICMP, other protocols) is
  rejected; IPv6 reaches only ``::1``.

It then makes the listening sockets (the transparent one, the explicit HTTP
proxy on :data:`PROXY_PORT`, DNS over UDP and TCP), sends them to the server
over the unix socket ``--handover`` names (``SCM_RIGHTS``), closes its own
copies, waits for the server's answer and becomes bwrap, which shares the
namespace. No process of its own stays: the namespace lives as long as bwrap
and the server's sockets in it. Options:

``--ip PATH``, ``--iptables-restore PATH``, ``--ip6tables-restore PATH``
    the programs (absolute paths: the environment has no PATH to search).
``--handover PATH``
    the server's unix socket for this session (connected before anything else).
``--bwrap-env``
    hand bwrap the descriptors the exec wrapper wrote (see ``_netns.py``).
``--timeout SECONDS``
    how long the server may take to answer (default 30).
"""

import os
import select
import socket
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

    Fail = Callable[[str], NoReturn]

__all__: list[str] = []

#: The transparent listener's port (the namespace is the session's own).
TRANSPARENT_PORT = 15001
#: The explicit HTTP proxy's port: ``HTTP_PROXY=http://127.0.0.1:3128`` inside.
PROXY_PORT = 3128
#: The DNS listeners' port, on 127.0.0.1.
DNS_PORT = 53
#: The address the default route takes as its source (TEST-NET-1: never real).
SOURCE = "192.0.2.1"
#: What the handover's message starts with; the server answers OK or a reason.
HELLO = b"lmc-egress-sockets 1"
OK = b"ok"

_REQUIRED = ("--ip", "--iptables-restore", "--ip6tables-restore", "--handover")


def rules4(transparent: int = TRANSPARENT_PORT, dns: int = DNS_PORT) -> str:
    """The namespace's IPv4 firewall (``iptables-restore`` text)."""
    return "\n".join(
        [
            "*nat",
            ":OUTPUT ACCEPT [0:0]",
            f"-A OUTPUT -p udp --dport 53 -j REDIRECT --to-ports {dns}",
            f"-A OUTPUT -p tcp --dport 53 -j REDIRECT --to-ports {dns}",
            f"-A OUTPUT -p tcp ! -d 127.0.0.0/8 -j REDIRECT --to-ports {transparent}",
            "COMMIT",
            "*filter",
            ":OUTPUT ACCEPT [0:0]",
            "-A OUTPUT -o lo -j ACCEPT",
            "-A OUTPUT -j REJECT",
            "COMMIT",
            "",
        ]
    )


RULES6 = "*filter\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -o lo -j ACCEPT\n-A OUTPUT -j REJECT\nCOMMIT\n"


def interface_commands(ip: str) -> list[list[str]]:
    """The ``ip`` commands that bring loopback up and route everything through it."""
    return [
        [ip, "link", "set", "lo", "up"],
        [ip, "addr", "add", f"{SOURCE}/32", "dev", "lo"],
        [ip, "route", "add", "default", "dev", "lo", "src", SOURCE],
    ]


def listeners() -> list[socket.socket]:
    """The sockets the server serves, in :class:`~lmc_runtime.egress.SessionSockets`'
    order: transparent, proxy, DNS over UDP, DNS over TCP."""
    made: list[socket.socket] = []
    for kind, port in (
        (socket.SOCK_STREAM, TRANSPARENT_PORT),
        (socket.SOCK_STREAM, PROXY_PORT),
        (socket.SOCK_DGRAM, DNS_PORT),
        (socket.SOCK_STREAM, DNS_PORT),
    ):
        sock = socket.socket(socket.AF_INET, kind)
        made.append(sock)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        if kind == socket.SOCK_STREAM:
            sock.listen(128)
    return made


def _run(argv: list[str], fail: "Fail") -> None:
    try:
        pid = os.posix_spawn(argv[0], argv, {})
    except OSError as exc:
        fail(f"cannot run {argv[0]}: {exc}")
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        fail(f"{' '.join(argv)} failed (status {status})")


def connect(path: str) -> socket.socket:
    """The server's handover socket at ``path`` (reached through its folder's
    descriptor: a long path would not fit a unix socket address)."""
    folder = os.open(os.path.dirname(path) or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(f"/proc/self/fd/{folder}/{os.path.basename(path)}")
    finally:
        os.close(folder)
    return sock


def hand_over(sock: socket.socket, made: list[socket.socket], timeout: float) -> bytes:
    """Send ``made`` to the server and return its answer (b"" if none in time)."""
    socket.send_fds(sock, [HELLO], [each.fileno() for each in made])
    for each in made:
        each.close()
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    if not poller.poll(max(0, int(timeout * 1000))):
        return b""
    return sock.recv(4096)


def main(args: list[str]) -> None:
    # Run with -I, this file's folder is not on the path: _netns.py is beside it.
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    import _netns as netns  # type: ignore[import-not-found]

    fail = netns._fail
    values, argv = netns.parse(args, "_egressns.py", _REQUIRED)
    options = {name: given[-1] if given else "" for name, given in values.items()}
    wrapper = netns.exec_wrapper()
    env = netns.bwrap_environment()
    try:
        handover = connect(options["--handover"])
    except OSError as exc:
        fail(f"cannot reach the server's egress gateway: {exc}")
    netns._enter_namespace()
    for command in interface_commands(options["--ip"]):
        _run(command, fail)
    netns._restore(options["--iptables-restore"], rules4())
    netns._restore(options["--ip6tables-restore"], RULES6)
    try:
        made = listeners()
        answer = hand_over(handover, made, float(options["--timeout"]))
    except OSError as exc:
        fail(f"cannot hand the session's sockets to the server: {exc}")
    if answer != OK:
        reason = answer.decode("utf-8", "replace").strip() or "no answer in time"
        fail(f"the server's egress gateway refused the session's sockets: {reason}")
    handover.close()
    netns.exec_bwrap("--bwrap-env" in options, argv, env, wrapper)


if __name__ == "__main__":
    main(sys.argv[1:])
