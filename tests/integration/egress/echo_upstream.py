"""An HTTPS (or plain HTTP) server on loopback, with a CA of its own, that
answers every request with what it received: for the secrets broker's tests."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from lmc_runtime.egress.ca import EgressCA


@dataclass
class Seen:
    """Every request the upstream received, raw (head and body)."""

    requests: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, data: bytes) -> None:
        with self.lock:
            self.requests.append(data)

    def all(self) -> bytes:
        with self.lock:
            return b"\n".join(self.requests)


class _Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # its head and body are two writes
    server: _EchoServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _answer(self) -> None:
        body = self._body()
        head = f"{self.requestline}\r\n{self.headers}".encode()
        self.server.seen.add(head + body)
        if self.path.startswith("/slow"):  # ten pieces, 0.3 s apart
            self.send_response(200)
            self.send_header("Content-Length", "10")
            self.end_headers()
            for _ in range(10):
                time.sleep(0.3)  # the upstream's pace, not a wait of the test
                self.wfile.write(b"x")
            return
        if self.path.startswith("/quiet"):
            answer = b"nothing to see\n"
        else:
            echoed = {"path": self.path, "headers": dict(self.headers.items())}
            echoed["body"] = body.decode("utf-8", "replace")
            answer = json.dumps(echoed).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_POST = do_PUT = _answer


class _EchoServer(ThreadingHTTPServer):
    daemon_threads = True
    seen: Seen


@dataclass
class Upstream:
    host: str
    port: int
    seen: Seen
    ca_file: Path | None


@contextmanager
def echo_upstream(
    name: str, folder: Path, *, tls: bool = True, host: str = "127.0.0.1"
) -> Iterator[Upstream]:
    """The server for ``name`` on a free port of ``host``; with ``tls``, its CA's
    certificate is written to ``folder/<name>-ca.pem``."""
    server = _EchoServer((host, 0), _Echo)
    server.seen = Seen()
    ca_file = None
    if tls:
        ca = EgressCA("echo upstream CA")
        ca_file = folder / f"{name}-ca.pem"
        ca_file.write_bytes(ca.pem)
        context: ssl.SSLContext = ca.server_context(name)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Upstream(host, server.server_address[1], server.seen, ca_file)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
