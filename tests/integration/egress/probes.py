"""What the egress tests run inside a session: small network probes (Python,
stdlib) whose outcome is a string, printed together as one JSON line.

A probe never raises: a refused, reset or timed-out attempt gives the
exception's name, so that the test reads what happened to each.
"""

from __future__ import annotations

import json
from typing import Any

from tests.integration.service.server import Server, output

__all__ = ["PRELUDE", "probe"]

PRELUDE = r'''
import json, socket, ssl, struct, subprocess
_T = 4
def _err(exc):
    return type(exc).__name__
def _ctx(verify):
    if verify:
        return ssl.create_default_context(cadata=CA)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx
def _family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET
def _read(sock):
    data = b""
    try:
        while len(data) < 65536:
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
    except OSError as exc:
        if not data:
            return _err(exc)
    return data.decode("latin-1")
def _request(path, host):
    return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").encode()
def tls_get(address, port=443, sni=None, path="/", host=None, verify=False):
    """GET over TLS to address:port (a name or an IP), with SNI sni (None: none)."""
    try:
        raw = socket.create_connection((address, port), timeout=_T)
        with _ctx(verify).wrap_socket(raw, server_hostname=sni) as s:
            s.sendall(_request(path, host or sni or address))
            return _read(s)
    except (OSError, ValueError) as exc:
        return _err(exc)
def http_get(address, port=80, path="/", host=None):
    try:
        with socket.create_connection((address, port), timeout=_T) as s:
            s.sendall(_request(path, host or address))
            return _read(s)
    except OSError as exc:
        return _err(exc)
def tcp(address, port):
    try:
        with socket.socket(_family(address), socket.SOCK_STREAM) as s:
            s.settimeout(_T)
            s.connect((address, port))
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return _read(s) or "open"
    except OSError as exc:
        return _err(exc)
def resolve(name, family=0):
    try:
        return sorted({i[4][0] for i in socket.getaddrinfo(name, 80, family, socket.SOCK_STREAM)})
    except OSError as exc:
        return _err(exc)
def udp(address, port, data):
    try:
        with socket.socket(_family(address), socket.SOCK_DGRAM) as s:
            s.settimeout(2)
            s.sendto(data.encode(), (address, port))
            return s.recv(65535).decode("latin-1")
    except OSError as exc:
        return _err(exc)
def dns_raw(server, name, port=53):
    q = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0\0\1\0\1"
    try:
        with socket.socket(_family(server), socket.SOCK_DGRAM) as s:
            s.settimeout(2)
            s.sendto(q, (server, port))
            return "answered %d bytes" % len(s.recv(512))
    except OSError as exc:
        return _err(exc)
def proxy(line, host=None):
    """Send one request line (CONNECT or an absolute URI) to the session's HTTP proxy."""
    try:
        with socket.create_connection(("127.0.0.1", 3128), timeout=_T) as s:
            s.sendall(f"{line}\r\nHost: {host or 'x'}\r\nConnection: close\r\n\r\n".encode())
            return _read(s)
    except OSError as exc:
        return _err(exc)
def nameserver():
    for line in open("/etc/resolv.conf"):
        if line.split()[:1] == ["nameserver"]:
            return line.split()[1]
    return "127.0.0.53"
def local_addresses():
    lines = open("/proc/net/fib_trie").read().splitlines()
    found = {lines[i - 1].split()[-1] for i, l in enumerate(lines) if "host LOCAL" in l}
    return sorted(a for a in found if not a.startswith("127."))
def curl(url, *args):
    try:
        done = subprocess.run(["curl", "-sS", "--max-time", str(_T), *args, url],
                              capture_output=True, text=True, timeout=_T + 5)
        return done.stdout + done.stderr
    except (OSError, subprocess.SubprocessError) as exc:
        return _err(exc)
'''


def probe(server: Server, session: str, ca: str, calls: dict[str, str]) -> dict[str, Any]:
    """Run ``calls`` (name: a Python expression over the prelude) in ``session``;
    what each gave."""
    body = "{" + ", ".join(f"{name!r}: {call}" for name, call in calls.items()) + "}"
    code = f"CA = {ca!r}\n{PRELUDE}\nprint(json.dumps({body}))\n"
    text = output(server.execute(session, code)).strip()
    assert text, "the probes printed nothing"
    return dict(json.loads(text.splitlines()[-1]))
