"""The session's files: upload, download, list, stat, remove, mkdir and move.

Paths are relative to the session's working directory; the server refuses
anything else (``..``, absolute paths, links on the way) with a typed
:class:`~lmc_runtime.errors.RemotePathError`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import quote

import anyio

from ..errors import ArgumentTypeError
from .models import FileInfo
from .rest import Api

__all__ = ["FileMethods", "UploadSource"]

#: What ``upload`` sends: bytes, or a binary file object read piece by piece.
UploadSource = bytes | bytearray | memoryview | IO[bytes]
_PIECE = 1 << 16
T = TypeVar("T")


def _file_url(api: Api, path: str) -> str:
    """The file route of ``path``, its ``.`` and ``..`` components escaped so that the
    URL is not normalized on the way: the server judges the path as given."""
    parts = quote(os.fspath(path), safe="/").split("/")
    return api.path(
        "/files/" + "/".join(p.replace(".", "%2E") if p in (".", "..") else p for p in parts)
    )


async def _pieces(source: IO[bytes]) -> AsyncIterator[bytes]:
    while piece := await anyio.to_thread.run_sync(source.read, _PIECE):
        yield piece


class FileMethods:
    """The file operations of :class:`~lmc_runtime.remote.RemoteComputer`, sync and async.

    A subclass gives the open :class:`Api` (``_open_api``), a way to call a
    coroutine from sync code (``_call``) and to iterate an async stream (``_iterate``).
    """

    async def _open_api(self) -> Api:
        raise NotImplementedError

    def _call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        raise NotImplementedError

    def _iterate(self, stream: AsyncIterator[bytes]) -> Iterator[bytes]:
        raise NotImplementedError

    # -- async ---------------------------------------------------------------------

    async def aupload(self, path: str, data: UploadSource) -> FileInfo:
        """Write ``data`` (bytes, or a binary file object) to ``path``; replaces a file."""
        api = await self._open_api()
        if isinstance(data, bytes | bytearray | memoryview):
            content: Any = bytes(data)
        elif hasattr(data, "read"):
            content = _pieces(data)
        else:
            raise ArgumentTypeError(
                f"upload needs bytes or a binary file, not {type(data).__name__}"
            )
        return FileInfo.from_json(await api.json("PUT", _file_url(api, path), content=content))

    async def adownload(self, path: str) -> bytes:
        """The whole content of the file at ``path``."""
        api = await self._open_api()
        return (await api.request("GET", _file_url(api, path))).content

    async def adownload_stream(self, path: str) -> AsyncIterator[bytes]:
        """The content of the file at ``path``, piece by piece as it arrives."""
        api = await self._open_api()
        async with api.streamed("GET", _file_url(api, path)) as response:
            async for piece in response.aiter_bytes():
                yield piece

    async def adownload_to(self, path: str, destination: str | Path) -> int:
        """Save the file at ``path`` to the local ``destination``; the bytes written."""
        written = 0
        async with await anyio.open_file(destination, "wb") as out:
            async for piece in self.adownload_stream(path):
                await out.write(piece)
                written += len(piece)
        return written

    async def alist(self, path: str = "") -> builtins.list[FileInfo]:
        """The entries of the directory ``path`` ("": the working directory), by name."""
        api = await self._open_api()
        data = await api.json("GET", api.path("/list"), params={"path": path})
        return [FileInfo.from_json(entry) for entry in data.get("entries", [])]

    async def astat(self, path: str) -> FileInfo:
        """What is at ``path`` (a link is reported, not followed)."""
        api = await self._open_api()
        return FileInfo.from_json(await api.json("GET", api.path("/stat"), params={"path": path}))

    async def aremove(self, path: str, recursive: bool = False) -> None:
        """Remove the file or directory at ``path`` (a non-empty one only if ``recursive``)."""
        api = await self._open_api()
        params = {"recursive": "true" if recursive else "false"}
        await api.request("DELETE", _file_url(api, path), params=params)

    async def amkdir(self, path: str, parents: bool = False) -> FileInfo:
        """Create the directory ``path`` (and its parents, if ``parents``)."""
        api = await self._open_api()
        body = {"path": path, "parents": parents}
        return FileInfo.from_json(await api.json("POST", api.path("/mkdir"), json=body))

    async def amove(self, source: str, destination: str, overwrite: bool = False) -> FileInfo:
        """Move ``source`` to ``destination``; the destination's information."""
        api = await self._open_api()
        body = {"source": source, "destination": destination, "overwrite": overwrite}
        return FileInfo.from_json(await api.json("POST", api.path("/move"), json=body))

    # -- sync ----------------------------------------------------------------------

    def upload(self, path: str, data: UploadSource) -> FileInfo:
        """The sync form of :meth:`aupload`."""
        return self._call(self.aupload, path, data)

    def download(self, path: str) -> bytes:
        """The sync form of :meth:`adownload`."""
        return self._call(self.adownload, path)

    def download_stream(self, path: str) -> Iterator[bytes]:
        """The sync form of :meth:`adownload_stream`."""
        return self._iterate(self.adownload_stream(path))

    def download_to(self, path: str, destination: str | Path) -> int:
        """The sync form of :meth:`adownload_to`."""
        return self._call(self.adownload_to, path, destination)

    def list(self, path: str = "") -> builtins.list[FileInfo]:
        """The sync form of :meth:`alist`."""
        return self._call(self.alist, path)

    def stat(self, path: str) -> FileInfo:
        """The sync form of :meth:`astat`."""
        return self._call(self.astat, path)

    def remove(self, path: str, recursive: bool = False) -> None:
        """The sync form of :meth:`aremove`."""
        self._call(self.aremove, path, recursive)

    def mkdir(self, path: str, parents: bool = False) -> FileInfo:
        """The sync form of :meth:`amkdir`."""
        return self._call(self.amkdir, path, parents)

    def move(self, source: str, destination: str, overwrite: bool = False) -> FileInfo:
        """The sync form of :meth:`amove`."""
        return self._call(self.amove, source, destination, overwrite)
