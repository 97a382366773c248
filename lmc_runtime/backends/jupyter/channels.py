"""A kernel's client sockets: one reader per channel, routing by parent ``msg_id``.

:class:`Channels` owns the jupyter-client client and the stdin link of one
kernel. One reader task per channel (shell, IOPub, stdin), all under one cancel
scope, receives every message and hands it to the :class:`Route` registered for
its parent ``msg_id``; output whose request is gone is kept as late output (a
background thread printing) or dropped. Nothing sleeps or polls: the readers
wait on the sockets.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio
import zmq
from anyio.abc import TaskStatus

from ...errors import KernelStartError
from .late import LateOutput
from .routing import KernelGone, Route
from .stdin import StdinLink

__all__ = ["Channels"]

#: How long readiness waits for the stdin handshake once shell and IOPub answer.
_STDIN_GRACE = 2.0

logger = logging.getLogger(__name__)


class Channels:
    """The client of one kernel, its readers, and the routes of open requests."""

    def __init__(self, client: Any, connection_info: Mapping[str, Any]) -> None:
        self._client = client
        client.start_channels(hb=False, stdin=False)
        self._stdin = StdinLink(client, connection_info)
        self._routes: dict[str, Route] = {}
        self._late = LateOutput()
        self._readers = anyio.CancelScope()

    @property
    def open_requests(self) -> bool:
        return bool(self._routes)

    async def read_all(self, *, task_status: TaskStatus[None]) -> None:
        """Run the readers until :meth:`close`; started once per kernel."""
        with self._readers:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read, "shell", self._client.shell_channel.socket)
                tg.start_soon(self._read, "iopub", self._client.iopub_channel.socket)
                tg.start_soon(self._read, "stdin", self._stdin.socket)
                tg.start_soon(self._stdin.watch)
                task_status.started()

    def close(self) -> None:
        """Stop the readers and close every socket."""
        self._readers.cancel()
        self._client.stop_channels()
        self._stdin.close()

    # -- requests ----------------------------------------------------------

    def request(
        self,
        channel: str,
        msg_type: str,
        content: dict[str, Any],
        metadata: dict[str, Any] | None = None,
    ) -> Route:
        """Send a request and return the route its replies will arrive on."""
        msg = self._client.session.msg(msg_type, content, metadata=metadata or {})
        route = Route(msg["header"]["msg_id"])
        # Sent first, then registered: no await in between, so no reply can be
        # missed, and a send that raises leaves no route behind.
        getattr(self._client, f"{channel}_channel").send(msg)
        self._routes[route.msg_id] = route
        return route

    def release(self, route: Route, retire_as: str | None = None) -> None:
        """Forget ``route``. With ``retire_as``, stream output that still comes for
        it (a background thread printing) is kept as late output under that tag."""
        self._routes.pop(route.msg_id, None)
        route.close()
        if retire_as is not None:
            self._late.retire(route.msg_id, retire_as)

    def take_late(self) -> tuple[list[tuple[str, str, str]], int]:
        """Late output as (tag, stream name, text), and how many bytes were dropped."""
        return self._late.take()

    def send_input(self, value: str) -> None:
        """Answer the kernel's ``input_request``."""
        self._stdin.send_input(value)

    async def broadcast(self, item: KernelGone) -> None:
        """Tell every open request that the kernel is gone."""
        for route in list(self._routes.values()):
            await route.put(item)

    # -- readiness -----------------------------------------------------------

    async def wait_ready(self, timeout: float) -> None:
        """Round-trip ``kernel_info`` until shell and IOPub answer, then wait for stdin.

        IOPub is a subscription: messages published before it is connected are
        lost, so an unanswered attempt is repeated, soon at first, then less often.
        """
        attempt = 0.1
        try:
            with anyio.fail_after(timeout):
                while not await self._kernel_info_answered(attempt):
                    attempt = min(attempt * 2, 1.0)
        except TimeoutError as exc:
            raise KernelStartError(f"the kernel did not become ready within {timeout:g} s") from exc
        await self._stdin_settled()

    async def _kernel_info_answered(self, within: float) -> bool:
        route = self.request("shell", "kernel_info_request", {})
        seen: set[str] = set()
        try:
            with anyio.move_on_after(within):
                async for item in route.receive:
                    if isinstance(item, KernelGone):
                        raise KernelStartError(
                            f"{item.description} while starting"
                            + (f":\n{item.log_tail}" if item.log_tail else "")
                        )
                    seen.add(item[0])
                    if {"shell", "iopub"} <= seen:
                        return True
        finally:
            self.release(route)
        return False

    async def _stdin_settled(self) -> None:
        """Give the stdin handshake a moment to finish after shell and IOPub did.

        Bounded, and never fatal: a kernel that announces its input requests on
        IOPub is answered either way, and replies on stdin queue until connected.
        """
        with anyio.move_on_after(_STDIN_GRACE) as scope:
            await self._stdin.wait_connected()
        if scope.cancelled_caught:
            logger.warning("the kernel's stdin channel did not confirm its connection")

    # -- the readers -----------------------------------------------------------

    async def _read(self, channel: str, socket: Any) -> None:
        session = self._client.session
        while True:
            try:
                frames = await socket.recv_multipart()
            except zmq.ZMQError:
                logger.debug("%s socket closed", channel)
                return
            try:
                _, frames = session.feed_identities(frames)
                msg = session.deserialize(frames)
            except Exception:
                logger.warning("dropped an unreadable %s message", channel, exc_info=True)
                continue
            parent_id = msg["parent_header"].get("msg_id", "")
            route = self._routes.get(parent_id)
            if route is not None:
                await route.put((channel, msg))
            else:
                self._late.keep(parent_id, msg)
