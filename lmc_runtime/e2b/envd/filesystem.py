"""envd's ``filesystem.Filesystem`` service: Stat, MakeDir, Move, ListDir and
Remove on the sandbox's home (see :mod:`.paths` for which paths are served),
and the watches (:mod:`.watch`).

Each call walks from the home's descriptor without following links
(:mod:`lmc_runtime.sandbox.fileops`), in a worker thread; what fileops refuses
(a link or FIFO on the way, a folder the code keeps changing) is told as
Connect's code for its status (:mod:`.codes`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import TypeVar

import anyio
from starlette.requests import Request

from ...sandbox import fileops
from ...sandbox.fileops._walk import lstat_at, walk
from ...sandbox.files import safe_parts
from ..door import sandbox_of
from ..registry import E2BSandbox
from .codes import ConnectError
from .connect import Call, Service
from .entries import entry_at, list_entries
from .paths import inside, relpath_of, user_of
from .proto import filesystem_pb2 as fs

__all__ = ["filesystem_service", "run_in_thread", "where"]

_Done = TypeVar("_Done")


async def run_in_thread(sandbox: E2BSandbox, call: Callable[[], _Done]) -> _Done:
    """``call`` (blocking files work) in a worker thread; the sandbox's session is
    touched, as the lmc API touches it. A refusal names its path as the sandbox
    sees it."""
    try:
        done = await anyio.to_thread.run_sync(call)
    except fileops.FileOpError as exc:
        seen = inside(exc.path)
        exc.message = exc.message.replace(repr(exc.path), repr(seen))
        exc.args, exc.path = (exc.message,), seen
        raise
    sandbox.session.touch()
    return done


def where(request: Request, path: str, *, allow_home: bool = True) -> tuple[E2BSandbox, str]:
    user_of(request)
    return sandbox_of(request), relpath_of(path, allow_home=allow_home) if path else ""


def _remove(sandbox: E2BSandbox, relpath: str) -> None:
    """Remove ``relpath``, a folder with what it holds (envd's Remove); a link or
    FIFO is unlinked itself, never followed; nothing there is no error."""
    root = sandbox.session.sandbox.work_dir
    parts = safe_parts(relpath)
    try:
        fd = walk(root, parts[:-1], relpath)
    except fileops.NoSuchFile:
        return  # nothing there: removed already, as envd's Remove says
    try:
        try:
            info = lstat_at(fd, parts[-1], relpath)
        except fileops.NoSuchFile:
            return
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            os.unlink(parts[-1], dir_fd=fd)
            return
    finally:
        os.close(fd)
    try:
        fileops.remove(root, relpath, recursive=True)
    except fileops.NoSuchFile:
        return


def _make_dir(sandbox: E2BSandbox, relpath: str) -> fs.EntryInfo:
    """Make the folder ``relpath`` and the missing ones on its way; one that
    exists already (of any kind) is ``already_exists``."""
    root, owner = sandbox.session.sandbox.work_dir, sandbox.session.sandbox.owner
    try:
        entry_at(root, relpath, owner)
    except fileops.NoSuchFile:
        pass
    else:
        raise ConnectError("already_exists", f"{inside(relpath)} already exists")
    fileops.make_directory(root, relpath, parents=True, owner=owner)
    return entry_at(root, relpath, owner)


def _move(sandbox: E2BSandbox, source: str, destination: str) -> fs.EntryInfo:
    """Move ``source`` to ``destination`` (a file there is replaced, as envd's
    rename replaces it; missing folders on the way are made)."""
    root, owner = sandbox.session.sandbox.work_dir, sandbox.session.sandbox.owner
    fileops.move(root, source, destination, overwrite=True, owner=owner)
    return entry_at(root, destination, owner)


def filesystem_service() -> Service:
    """``filesystem.Filesystem``, its watches included."""
    from .watch_rpcs import add_watch_rpcs

    service = Service("filesystem.Filesystem")

    @service.unary("Stat", fs.StatRequest)
    async def stat_(request: fs.StatRequest, call: Call) -> fs.StatResponse:
        sandbox, relpath = where(call.request, request.path)
        work = sandbox.session.sandbox
        entry = await run_in_thread(sandbox, lambda: entry_at(work.work_dir, relpath, work.owner))
        return fs.StatResponse(entry=entry)

    @service.unary("MakeDir", fs.MakeDirRequest)
    async def make_dir(request: fs.MakeDirRequest, call: Call) -> fs.MakeDirResponse:
        sandbox, relpath = where(call.request, request.path, allow_home=False)
        return fs.MakeDirResponse(
            entry=await run_in_thread(sandbox, lambda: _make_dir(sandbox, relpath))
        )

    @service.unary("Move", fs.MoveRequest)
    async def move(request: fs.MoveRequest, call: Call) -> fs.MoveResponse:
        sandbox, source = where(call.request, request.source, allow_home=False)
        destination = relpath_of(request.destination, allow_home=False)
        entry = await run_in_thread(sandbox, lambda: _move(sandbox, source, destination))
        return fs.MoveResponse(entry=entry)

    @service.unary("ListDir", fs.ListDirRequest)
    async def list_dir(request: fs.ListDirRequest, call: Call) -> fs.ListDirResponse:
        sandbox, relpath = where(call.request, request.path)
        work = sandbox.session.sandbox
        depth = request.depth or 1
        entries = await run_in_thread(
            sandbox, lambda: list_entries(work.work_dir, relpath, depth, work.owner)
        )
        return fs.ListDirResponse(entries=entries)

    @service.unary("Remove", fs.RemoveRequest)
    async def remove(request: fs.RemoveRequest, call: Call) -> fs.RemoveResponse:
        sandbox, relpath = where(call.request, request.path, allow_home=False)
        await run_in_thread(sandbox, lambda: _remove(sandbox, relpath))
        return fs.RemoveResponse()

    add_watch_rpcs(service)
    return service
