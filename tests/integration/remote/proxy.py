"""A TCP proxy in front of a server, whose connections a test can cut or freeze.

``cut()`` closes every connection (the server or the network went away at once);
``freeze()`` stops forwarding without closing anything (a network that went
silent: no FIN, no RST, only nothing).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Proxy", "proxy_to"]


class Proxy:
    """Forwards ``127.0.0.1:<port>`` to ``upstream``."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.frozen = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._start(self._accept)

    def _start(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                server = socket.create_connection(self.upstream)
                with self._lock:
                    self._sockets += [client, server]
                self._start(self._pump, client, server)
                self._start(self._pump, server, client)

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if self.frozen.is_set():
                    continue  # swallowed: the network went silent
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._sockets) // 2

    def freeze(self) -> None:
        """Forward nothing more, and close nothing."""
        self.frozen.set()

    def cut(self) -> None:
        """Close every connection at once (new ones are still accepted)."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        self.listener.close()
        self.cut()
        for thread in self._threads:
            thread.join(10)


@contextmanager
def proxy_to(port: int) -> Iterator[Proxy]:
    proxy = Proxy(("127.0.0.1", port))
    try:
        yield proxy
    finally:
        proxy.close()
