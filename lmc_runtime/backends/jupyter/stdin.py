"""The stdin channel, with a socket monitor that knows when it is really connected.

A kernel sends ``input_request`` to the client's stdin socket through a ROUTER,
and a ROUTER silently drops a message to a peer whose handshake has not
finished. jupyter-client's own stdin channel connects blindly, so an ``input()``
in the first cell after a (re)start could be lost and hang forever. This link
creates the socket itself, attaches a monitor before connecting, and tracks
handshake and disconnect events, so "ready" can include "stdin is connected".
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import anyio
import zmq
from zmq.utils.monitor import parse_monitor_message

__all__ = ["StdinLink"]

logger = logging.getLogger(__name__)

_CONNECTED = getattr(zmq, "EVENT_HANDSHAKE_SUCCEEDED", zmq.EVENT_CONNECTED)


def _stdin_url(info: Mapping[str, Any]) -> str:
    if info["transport"] == "ipc":
        return f"ipc://{info['ip']}-{info['stdin_port']}"
    return f"{info['transport']}://{info['ip']}:{info['stdin_port']}"


class StdinLink:
    """A DEALER on the kernel's stdin port whose connection state is known."""

    def __init__(self, client: Any, connection_info: Mapping[str, Any]) -> None:
        self._session = client.session
        self.socket: Any = client.context.socket(zmq.DEALER)
        self.socket.linger = 0
        self.socket.identity = client.session.bsession
        self._monitor: Any = self.socket.get_monitor_socket(_CONNECTED | zmq.EVENT_DISCONNECTED)
        self.socket.connect(_stdin_url(connection_info))
        self._connected = anyio.Event()

    async def watch(self) -> None:
        """Follow the monitor's events for as long as the link lives."""
        while True:
            try:
                frames = await self._monitor.recv_multipart()
            except zmq.ZMQError:
                return
            event = parse_monitor_message(frames)["event"]
            if event == _CONNECTED:
                self._connected.set()
            elif event == zmq.EVENT_DISCONNECTED and self._connected.is_set():
                self._connected = anyio.Event()

    async def wait_connected(self) -> None:
        await self._connected.wait()

    def send_input(self, value: str) -> None:
        self._session.send(self.socket, "input_reply", {"value": value})

    def close(self) -> None:
        with contextlib.suppress(zmq.ZMQError):
            self.socket.disable_monitor()
        self._monitor.close(linger=0)
        self.socket.close(linger=0)
