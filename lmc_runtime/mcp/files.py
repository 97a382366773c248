"""The files of a workspace's working directory: a sandbox's, read and written
from the host without following anything its code planted, or a remote
session's, through the ``lmc serve`` files API.

Paths are relative to the working directory. A refusal (a missing file, a
link, ``..``, a file too large to return) raises an ``OSError`` or an
:class:`~lmc_runtime.errors.LMCError` saying why; the tools turn it into their
error result.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..sandbox import fileops, open_in_session
from ..sandbox.upload import SessionUpload

if TYPE_CHECKING:
    from ..remote import RemoteComputer

__all__ = ["FileTooLarge", "Files", "RemoteFiles", "SandboxFiles"]

#: A file entry: ``path``, ``name``, ``kind`` (file, directory, symlink, other),
#: ``size``, ``mtime``.
Entry = dict[str, Any]


class FileTooLarge(ValueError):
    """A file is larger than what one tool result may carry."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} has {size} bytes, more than the {limit} a read may return")


class Files(Protocol):
    """Reading, writing and listing the files of one workspace."""

    async def read(self, path: str, limit: int) -> bytes:
        """The content of the file at ``path``; :class:`FileTooLarge` past ``limit`` bytes."""
        ...

    async def write(self, path: str, data: bytes) -> Entry:
        """Write ``data`` to ``path`` (folders on the way are made); the file's entry."""
        ...

    async def list(self, path: str) -> list[Entry]:
        """The entries of the folder ``path`` (``""``: the working directory), by name."""
        ...


class SandboxFiles:
    """The working directory of a sandbox, seen from the host."""

    def __init__(self, root: Path, owner: tuple[int, int] | None) -> None:
        """``owner``: the (uid, gid) of the sandbox's user, who owns what is written."""
        self.root = root
        self.owner = owner

    def _read(self, path: str, limit: int) -> bytes:
        with open_in_session(self.root, path, "rb") as file:
            data: bytes = file.read(limit + 1)
            if len(data) > limit:
                size = max(len(data), fileops.stat_path(self.root, path).size)
                raise FileTooLarge(path, size, limit)
            return data

    async def read(self, path: str, limit: int) -> bytes:
        return await anyio.to_thread.run_sync(self._read, path, limit)

    def _write(self, path: str, data: bytes) -> Entry:
        upload = SessionUpload(self.root, path, self.owner)
        try:
            upload.open()
            upload.write(data)
            upload.commit()
        finally:
            upload.abort()
        return asdict(fileops.stat_path(self.root, path))

    async def write(self, path: str, data: bytes) -> Entry:
        return await anyio.to_thread.run_sync(self._write, path, data)

    async def list(self, path: str) -> list[Entry]:
        listing = await anyio.to_thread.run_sync(fileops.list_directory, self.root, path)
        return [asdict(entry) for entry in listing.entries]


class RemoteFiles:
    """The working directory of a remote session."""

    def __init__(self, remote: RemoteComputer) -> None:
        self.remote = remote

    async def read(self, path: str, limit: int) -> bytes:
        size = (await self.remote.astat(path)).size
        if size > limit:
            raise FileTooLarge(path, size, limit)
        data = await self.remote.adownload(path)
        if len(data) > limit:  # it grew since
            raise FileTooLarge(path, len(data), limit)
        return data

    async def write(self, path: str, data: bytes) -> Entry:
        return asdict(await self.remote.aupload(path, data))

    async def list(self, path: str) -> list[Entry]:
        return [asdict(entry) for entry in await self.remote.alist(path)]
