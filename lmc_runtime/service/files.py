"""File upload and download in a session's working directory, through the sandbox's
safe file access (no ``..``, no absolute paths, no symlinks followed)."""

from __future__ import annotations

import errno
import posixpath
from collections.abc import AsyncIterator
from typing import IO

import anyio
from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse

from ..errors import (
    BadPath,
    DiskLimitExceeded,
    LMCError,
    NotARegularFile,
    PathIsDirectory,
    PathRefused,
    RequestTooLarge,
    ServiceError,
    SessionFileNotFound,
    UnsafePath,
)
from ..sandbox import open_in_session
from ..sandbox.upload import SessionUpload
from .routes import _ERRORS, require_token
from .state import service_of

__all__ = ["checked_path", "files_router"]

_CHUNK = 64 * 1024


def checked_path(path: str) -> str:
    """``path`` if it is a plain relative path inside the working directory; else
    :class:`BadPath`."""
    if not path or "\x00" in path:
        raise BadPath(path, "the path is empty or contains a NUL byte")
    if path.startswith("/") or posixpath.isabs(path):
        raise BadPath(path, f"absolute paths are not allowed: {path!r}")
    parts = path.split("/")
    if any(part == ".." for part in parts):
        raise BadPath(path, f"'..' is not allowed in a path: {path!r}")
    if any(part in ("", ".") for part in parts):
        raise BadPath(path, f"the path has an empty or '.' component: {path!r}")
    return path


def _too_large(limit: int) -> RequestTooLarge:
    return RequestTooLarge("upload", limit)


def _refusal(path: str, exc: Exception) -> ServiceError:
    """Why the session's file at ``path`` cannot be written or read, given ``exc``."""
    if isinstance(exc, UnsafePath) and exc.reason.startswith("not a regular file"):
        return NotARegularFile(path, exc.reason)
    if isinstance(exc, FileNotFoundError):
        return SessionFileNotFound(path)
    if isinstance(exc, IsADirectoryError):
        return PathIsDirectory(path)
    if isinstance(exc, OSError) and exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EXDEV):
        return PathRefused(path, "goes through a symbolic link: refused")
    if isinstance(exc, OSError) and exc.errno in (errno.EFBIG, errno.ENOSPC, errno.EDQUOT):
        return DiskLimitExceeded(path)
    return PathRefused(path, f"cannot be opened safely: {exc}")


def files_router() -> APIRouter:
    """``PUT``/``GET /v1/sessions/{id}/files/{path}``."""
    router = APIRouter(prefix="/v1/sessions", dependencies=[Depends(require_token)])

    @router.put("/{session_id}/files/{path:path}", status_code=201, responses=_ERRORS)
    async def upload(request: Request, session_id: str, path: str) -> dict[str, object]:
        service = service_of(request)
        session = service.manager.get(session_id)
        relpath = checked_path(path)
        limit = service.settings.max_upload_bytes
        file_limit = session.policy.limits.file_size_bytes
        if file_limit is not None:
            limit = min(limit, file_limit)
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)
        try:
            upload = SessionUpload(session.sandbox.work_dir, relpath, session.sandbox.owner)
        except LMCError as exc:
            raise _refusal(relpath, exc) from exc
        try:
            await anyio.to_thread.run_sync(upload.open)
            async for piece in request.stream():
                if upload.size + len(piece) > limit:
                    raise _too_large(limit)
                if piece:
                    await anyio.to_thread.run_sync(upload.write, piece)
            await anyio.to_thread.run_sync(upload.commit)
        except ServiceError:  # too large: said as it is
            raise
        except (OSError, LMCError, ValueError) as exc:
            raise _refusal(relpath, exc) from exc
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(upload.abort)
        session.touch()
        return {"path": relpath, "size": upload.size}

    @router.get(
        "/{session_id}/files/{path:path}",
        responses={**_ERRORS, 200: {"content": {"application/octet-stream": {}}}},
        response_class=Response,
    )
    async def download(request: Request, session_id: str, path: str) -> StreamingResponse:
        session = service_of(request).manager.get(session_id)
        relpath = checked_path(path)
        root = session.sandbox.work_dir
        try:
            handle: IO[bytes] = await anyio.to_thread.run_sync(
                lambda: open_in_session(root, relpath, "rb")
            )
        except (OSError, LMCError, ValueError) as exc:
            raise _refusal(relpath, exc) from exc
        session.touch()

        async def content() -> AsyncIterator[bytes]:
            try:
                while piece := await anyio.to_thread.run_sync(handle.read, _CHUNK):
                    yield piece
            finally:
                handle.close()

        return StreamingResponse(content(), media_type="application/octet-stream")

    return router
