"""The test internet's servers, run inside a network namespace of their own
(``ip netns exec NS python -m benchmarks.internet.serve CONFIG``; stdlib only).

The configuration (JSON) names a log file and listeners: ``https``, ``http``,
``tcp`` (accepts, records, closes), ``udp`` (echoes) and ``dns``. Every
connection, TLS name (SNI), request, datagram and DNS query is appended to the
log as one JSON line, written before it is answered. The process prints
``ready`` once every listener is bound, and ends on SIGTERM.
"""

from __future__ import annotations

import http.server
import json
import logging
import signal
import socket
import socketserver
import ssl
import sys
import threading
from typing import Any

from .dns import answer, parse_question

logger = logging.getLogger(__name__)
_CHUNK = 1 << 16


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


class Log:
    """The events, one JSON line each, flushed as they happen."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (for the process's life)
        self._lock = threading.Lock()

    def __call__(self, kind: str, at: str, **fields: Any) -> None:
        with self._lock:
            self._file.write(json.dumps({"kind": kind, "at": at, **fields}) + "\n")
            self._file.flush()


class Zone:
    """The names the DNS server answers: exact ones, ``*.`` wildcards, and
    rebinding names (``rebind-...``: the first A query answered one way, the
    rest another). Every answer has TTL 0."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.names: dict[str, list[str]] = spec["names"]
        self.rebind: dict[str, Any] = spec["rebind"]
        self._asked: set[str] = set()
        self._lock = threading.Lock()

    def lookup(self, name: str, qtype: int) -> list[str] | None:
        prefix, suffix = self.rebind["prefix"], self.rebind["suffix"]
        if name.startswith(prefix) and name.endswith("." + suffix):
            with self._lock:
                first = qtype == 1 and name not in self._asked
                if qtype == 1:
                    self._asked.add(name)
            return list(self.rebind["first"] if first else self.rebind["then"])
        if name in self.names:
            return list(self.names[name])
        parts = name.split(".")
        for cut in range(1, len(parts)):
            wildcard = "*." + ".".join(parts[cut:])
            if wildcard in self.names:
                return list(self.names[wildcard])
        return None


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        server = self.server
        # The Authorization header as it arrived: the secrets tests check what went out.
        authorization = self.headers.get("Authorization")
        server.log(
            "request",
            server.at,
            host=self.headers.get("Host"),
            path=self.path,
            authorization=authorization,
        )
        if self.path.startswith("/bytes/"):
            size = int(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            block = b"\0" * _CHUNK
            while size > 0:
                self.wfile.write(block[: min(size, _CHUNK)])
                size -= _CHUNK
            return
        body = f"hello from {server.label} {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug(format, *args)


class _HTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, spec: dict[str, Any], log: Log) -> None:
        self.label: str = spec["label"]
        self.log = log
        self.at = f"{spec['host']}:{spec['port']}"
        self.tls: ssl.SSLContext | None = None
        if spec["kind"] == "https":
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(spec["cert"])
            self.tls.sni_callback = self._sni
        self.address_family = _family(spec["host"])
        super().__init__((spec["host"], spec["port"]), _Handler)

    def server_bind(self) -> None:
        # HTTPServer's own asks DNS for its name, which hangs where none answers
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.label, self.server_address[1]

    def _sni(self, _sock: Any, name: str | None, _context: ssl.SSLContext) -> None:
        self.log("sni", self.at, sni=name)

    def finish_request(self, request: Any, client_address: Any) -> None:
        self.log("connect", self.at, peer=client_address[0])
        if self.tls is not None:
            request.settimeout(30)
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except OSError as exc:
                self.log("tls_failed", self.at, error=type(exc).__name__)
                return
        super().finish_request(request, client_address)


def _tcp(listener: socket.socket, spec: dict[str, Any], log: Log) -> None:
    at = f"{spec['host']}:{spec['port']}"
    while True:
        client, peer = listener.accept()
        log("connect", at, peer=peer[0])
        client.close()


def _udp_socket(spec: dict[str, Any]) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((spec["host"], spec["port"]))
    return sock


def _udp(sock: socket.socket, spec: dict[str, Any], log: Log, zone: Zone | None) -> None:
    at = f"{spec['host']}:{spec['port']}"
    while True:
        data, peer = sock.recvfrom(65535)
        if zone is None:
            log("udp", at, peer=peer[0], data=data.decode("latin-1"))
            sock.sendto(data, peer)
            continue
        try:
            question = parse_question(data)
        except ValueError:
            log("dns_unreadable", at, peer=peer[0])
            continue
        log("dns", at, peer=peer[0], name=question.name, qtype=question.qtype)
        sock.sendto(answer(question, zone.lookup(question.name, question.qtype), 0), peer)


def main(config_path: str) -> None:
    with open(config_path, encoding="utf-8") as file:
        config = json.load(file)
    log = Log(config["log"])
    zone = Zone(config["zone"]) if "zone" in config else None
    threads = []
    for spec in config["listeners"]:
        if spec["kind"] in ("http", "https"):
            server = _HTTPServer(spec, log)
            threads.append(threading.Thread(target=server.serve_forever, daemon=True))
        elif spec["kind"] == "tcp":
            address = (spec["host"], spec["port"])
            listener = socket.create_server(address, family=_family(spec["host"]))
            threads.append(threading.Thread(target=_tcp, args=(listener, spec, log), daemon=True))
        else:
            sock = _udp_socket(spec)
            answers = zone if spec["kind"] == "dns" else None
            threads.append(
                threading.Thread(target=_udp, args=(sock, spec, log, answers), daemon=True)
            )
    for thread in threads:
        thread.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    stop.wait()


if __name__ == "__main__":
    main(sys.argv[1])
