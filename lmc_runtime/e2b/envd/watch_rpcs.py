"""envd's watch RPCs: ``WatchDir`` (a stream of events, with keep-alives) and
the polled ``CreateWatcher``, ``GetWatcherEvents`` and ``RemoveWatcher``
(see :mod:`.watch`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import anyio
from starlette.requests import Request

from ..door import door_of
from .codes import ConnectError
from .connect import Call, Service
from .filesystem import run_in_thread, where
from .proto import filesystem_pb2 as fs
from .watch import Watch, room_for_one, server_count, watches_of

__all__ = ["add_watch_rpcs"]

#: The keep-alive interval of a stream, in seconds: the SDK's
#: ``Keepalive-Ping-Interval`` header, within these bounds.
_KEEPALIVE = (5.0, 50.0, 300.0)


def _keepalive(request: Request) -> float:
    low, default, high = _KEEPALIVE
    header = request.headers.get("keepalive-ping-interval", "")
    return min(max(float(header), low), high) if header.isdigit() else default


async def _opened(call: Call, path: str, recursive: bool, include_entry: bool) -> Watch:
    sandbox, relpath = where(call.request, path)
    work = sandbox.session.sandbox
    watches = room_for_one(sandbox)
    watch = Watch(
        work.work_dir,
        relpath,
        recursive=recursive,
        include_entry=include_entry,
        owner=work.owner,
        count=server_count(door_of(call.request)),
    )
    await run_in_thread(sandbox, watch.open)
    watches[watch.id] = watch
    return watch


async def _readable(watch: Watch, interval: float) -> bool:
    """Wait until ``watch`` has events (True), ``interval`` passes or the
    sandbox ends (False)."""
    readable = False
    with anyio.move_on_after(interval):
        async with anyio.create_task_group() as group:

            async def events() -> None:
                nonlocal readable
                await anyio.wait_readable(watch.fd)
                readable = True
                group.cancel_scope.cancel()

            async def stopped() -> None:
                await watch.stopped.wait()
                group.cancel_scope.cancel()

            group.start_soon(events)
            group.start_soon(stopped)
    return readable


def add_watch_rpcs(service: Service) -> None:
    """Add the watch RPCs to ``filesystem.Filesystem``."""

    @service.server_stream("WatchDir", fs.WatchDirRequest)
    async def watch_dir(
        request: fs.WatchDirRequest, call: Call
    ) -> AsyncGenerator[fs.WatchDirResponse, None]:
        watch = await _opened(call, request.path, request.recursive, request.include_entry)
        watch.streamed = True
        sandbox = where(call.request, request.path)[0]
        interval = _keepalive(call.request)
        try:
            yield fs.WatchDirResponse(start=fs.WatchDirResponse.StartEvent())
            while not watch.ended and not watch.stopped.is_set():
                if not await _readable(watch, interval):
                    yield fs.WatchDirResponse(keepalive=fs.WatchDirResponse.KeepAlive())
                    continue
                for event in await anyio.to_thread.run_sync(watch.read):
                    yield fs.WatchDirResponse(filesystem=event)
        finally:
            watches_of(sandbox).pop(watch.id, None)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(watch.close)

    @service.unary("CreateWatcher", fs.CreateWatcherRequest)
    async def create_watcher(
        request: fs.CreateWatcherRequest, call: Call
    ) -> fs.CreateWatcherResponse:
        watch = await _opened(call, request.path, request.recursive, request.include_entry)
        return fs.CreateWatcherResponse(watcher_id=watch.id)

    def _watch(call: Call, watcher_id: str) -> Watch:
        sandbox = where(call.request, "")[0]
        watch = watches_of(sandbox).get(watcher_id)
        if watch is None or watch.streamed:
            raise ConnectError("not_found", f"no watcher {watcher_id[:40]!r} in this sandbox")
        return watch

    @service.unary("GetWatcherEvents", fs.GetWatcherEventsRequest)
    async def get_watcher_events(
        request: fs.GetWatcherEventsRequest, call: Call
    ) -> fs.GetWatcherEventsResponse:
        watch = _watch(call, request.watcher_id)
        events = await anyio.to_thread.run_sync(watch.read)
        return fs.GetWatcherEventsResponse(events=events)

    @service.unary("RemoveWatcher", fs.RemoveWatcherRequest)
    async def remove_watcher(
        request: fs.RemoveWatcherRequest, call: Call
    ) -> fs.RemoveWatcherResponse:
        watch = _watch(call, request.watcher_id)
        sandbox = where(call.request, "")[0]
        watches_of(sandbox).pop(watch.id, None)
        await anyio.to_thread.run_sync(watch.close)
        return fs.RemoveWatcherResponse()
