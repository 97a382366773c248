"""What the wire between RemoteComputer and lmc serve must be like."""

from __future__ import annotations

import socket

from lmc_runtime.service.server import listen


def test_the_servers_connections_send_without_waiting_for_acks() -> None:
    """Regression: without TCP_NODELAY on the listening socket (which accepted
    connections inherit), the second write of each response waited for the
    client's delayed ACK: 40 ms on every request after a connection's first."""
    sock = listen("127.0.0.1", 0, 8)
    try:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        client = socket.create_connection(sock.getsockname()[:2])
        accepted, _ = sock.accept()
        with client, accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        sock.close()
