"""The files API of a session: upload, download, delete, list, stat, mkdir and
move. Paths are relative to the session's cwd (the folder its code starts in,
``/home/user`` or the ``cwd`` it was made with), and walked from the working
directory's descriptor through that folder too (so a link the code put in its
place is refused like any other), through the sandbox's safe file access (no ``..``,
no absolute paths; every path walked from a descriptor, no link followed; see
:mod:`lmc_runtime.sandbox.fileops`). Blocking calls run in worker threads."""

from __future__ import annotations

import errno
import posixpath
from collections.abc import Callable
from typing import IO, Annotated, TypeVar

import anyio
from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ValidationError

from ..errors import LMCError, ServiceError, UnsafePath
from ..sandbox import fileops, open_in_session
from ..sandbox.upload import SessionUpload
from .errors import (
    BadPath,
    DiskLimitExceeded,
    InvalidRequest,
    NotARegularFile,
    PathIsDirectory,
    PathRefused,
    RequestTooLarge,
    SessionFileNotFound,
)
from .file_models import (
    DirectoryListing,
    FileInfo,
    MakeDirectory,
    MoveRequest,
    declared_body,
    file_info,
    listing,
)
from .outputs import output_routes
from .routes import _ERRORS, require_token
from .session import ServiceSession
from .state import service_of
from .streams import parse_json, read_body, streamed_file
from .wording import validation_text

__all__ = ["checked_path", "files_router"]


#: The upload's body, as OpenAPI declares it (the route streams it itself).
_RAW_BODY = {
    "requestBody": {
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
        "required": True,
    }
}


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
    if isinstance(exc, UnsafePath) and exc.reason == "not a regular file but a directory":
        return PathIsDirectory(path)
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


def _session(request: Request, session_id: str) -> ServiceSession:
    return service_of(request).manager.get(session_id)


def _in_cwd(session: ServiceSession, relpath: str) -> str:
    """``relpath`` (relative to the session's cwd) from its working directory."""
    if not relpath:
        return session.cwd
    return f"{session.cwd}/{relpath}" if session.cwd else relpath


_Body = TypeVar("_Body", bound=BaseModel)
_Done = TypeVar("_Done")


async def _op(session: ServiceSession, call: Callable[[], _Done]) -> _Done:
    """``call``, a files operation, in a worker thread; what it refuses names its path
    as the client does: relative to the session's cwd (see :func:`_in_cwd`)."""
    try:
        return await anyio.to_thread.run_sync(call)
    except fileops.FileOpError as exc:
        cwd = session.cwd
        if cwd and (exc.path == cwd or exc.path.startswith(f"{cwd}/")):
            seen = exc.path[len(cwd) + 1 :] or "."
            exc.message = exc.message.replace(repr(exc.path), repr(seen))
            exc.args, exc.path = (exc.message,), seen
        raise


async def _parsed(request: Request, model: type[_Body]) -> _Body:
    """The JSON body of ``request`` as ``model``; 400 with the reason otherwise."""
    body = await read_body(request, service_of(request).settings.max_request_bytes)
    try:
        return model.model_validate(parse_json(body))
    except ValidationError as exc:
        raise InvalidRequest(validation_text(exc)) from exc


async def _upload(request: Request, session: ServiceSession, relpath: str) -> FileInfo:
    """Stream the body into ``relpath``; the file as it ends up."""
    file_limit = session.policy.limits.file_size_bytes
    limit = min(service_of(request).settings.max_upload_bytes, file_limit or 1 << 62)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    try:
        upload = SessionUpload(
            session.sandbox.work_dir, _in_cwd(session, relpath), session.sandbox.owner
        )
    except LMCError as exc:
        raise _refusal(relpath, exc) from exc
    room = await session.sandbox.disk_room()
    try:
        await anyio.to_thread.run_sync(upload.open)
        async for piece in request.stream():
            if upload.size + len(piece) > limit:
                raise _too_large(limit)
            if room is not None and upload.size + len(piece) > room:
                raise DiskLimitExceeded(relpath)
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
    root, where = session.sandbox.work_dir, _in_cwd(session, relpath)
    return file_info(await anyio.to_thread.run_sync(fileops.stat_path, root, where), session.cwd)


def _transfer_routes(router: APIRouter) -> None:
    """Upload and download of one file."""

    @router.put(
        "/{session_id}/files/{path:path}",
        status_code=201,
        responses=_ERRORS,
        openapi_extra=_RAW_BODY,
    )
    async def upload(request: Request, session_id: str, path: str) -> FileInfo:
        """Write the body into the file at ``path`` (missing folders are made)."""
        session = _session(request, session_id)
        info = await _upload(request, session, checked_path(path))
        session.touch()
        return info

    @router.get(
        "/{session_id}/files/{path:path}",
        responses={**_ERRORS, 200: {"content": {"application/octet-stream": {}}}},
        response_class=Response,
    )
    async def download(request: Request, session_id: str, path: str) -> StreamingResponse:
        """The file at ``path``, streamed."""
        session = _session(request, session_id)
        relpath = checked_path(path)
        root, where = session.sandbox.work_dir, _in_cwd(session, relpath)
        try:
            handle: IO[bytes] = await anyio.to_thread.run_sync(
                lambda: open_in_session(root, where, "rb")
            )
        except (OSError, LMCError, ValueError) as exc:
            raise _refusal(relpath, exc) from exc
        session.touch()

        return streamed_file(handle, "application/octet-stream")


def _tree_routes(router: APIRouter) -> None:
    """Delete, list and stat."""

    @router.delete("/{session_id}/files/{path:path}", status_code=204, responses=_ERRORS)
    async def delete(
        request: Request, session_id: str, path: str, recursive: bool = False
    ) -> Response:
        """Delete the file or folder at ``path`` (a folder with entries: ``recursive``)."""
        session = _session(request, session_id)
        relpath, root = _in_cwd(session, checked_path(path)), session.sandbox.work_dir
        await _op(session, lambda: fileops.remove(root, relpath, recursive=recursive))
        session.touch()
        return Response(status_code=204)

    @router.get("/{session_id}/list", responses=_ERRORS)
    async def list_directory(
        request: Request, session_id: str, path: Annotated[str, Query(max_length=4096)] = ""
    ) -> DirectoryListing:
        """The entries of the folder ``path`` ('': the session's cwd), by name."""
        session = _session(request, session_id)
        relpath = _in_cwd(session, checked_path(path) if path else "")
        root = session.sandbox.work_dir
        found = await _op(session, lambda: fileops.list_directory(root, relpath))
        session.touch()
        return listing(found, session.cwd)

    @router.get("/{session_id}/stat", responses=_ERRORS)
    async def stat(
        request: Request, session_id: str, path: Annotated[str, Query(max_length=4096)]
    ) -> FileInfo:
        """The file or folder at ``path``."""
        session = _session(request, session_id)
        relpath, root = _in_cwd(session, checked_path(path)), session.sandbox.work_dir
        info = await _op(session, lambda: fileops.stat_path(root, relpath))
        session.touch()
        return file_info(info, session.cwd)


def _change_routes(router: APIRouter) -> None:
    """Mkdir and move."""

    @router.post(
        "/{session_id}/mkdir",
        status_code=201,
        responses=_ERRORS,
        openapi_extra=declared_body(MakeDirectory),
    )
    async def mkdir(request: Request, session_id: str) -> FileInfo:
        """Make the folder ``path`` (and the missing ones on its way with ``parents``)."""
        session = _session(request, session_id)
        spec = await _parsed(request, MakeDirectory)
        relpath, sandbox = _in_cwd(session, checked_path(spec.path)), session.sandbox
        info = await _op(
            session,
            lambda: fileops.make_directory(
                sandbox.work_dir, relpath, parents=spec.parents, owner=sandbox.owner
            ),
        )
        session.touch()
        return file_info(info, session.cwd)

    @router.post("/{session_id}/move", responses=_ERRORS, openapi_extra=declared_body(MoveRequest))
    async def move(request: Request, session_id: str) -> FileInfo:
        """Move ``source`` to ``destination``; the destination as it ends up."""
        session = _session(request, session_id)
        spec = await _parsed(request, MoveRequest)
        source = _in_cwd(session, checked_path(spec.source))
        destination = _in_cwd(session, checked_path(spec.destination))
        sandbox = session.sandbox
        info = await _op(
            session,
            lambda: fileops.move(
                sandbox.work_dir,
                source,
                destination,
                overwrite=spec.overwrite,
                owner=sandbox.owner,
            ),
        )
        session.touch()
        return file_info(info, session.cwd)


def files_router() -> APIRouter:
    """``/v1/sessions/{id}/files/{path}`` (PUT, GET, DELETE), ``/list``, ``/stat``,
    ``/mkdir`` and ``/move``; ``/outputs/{name}`` (saved whole outputs)."""
    router = APIRouter(prefix="/v1/sessions", dependencies=[Depends(require_token)])
    output_routes(router)
    _transfer_routes(router)
    _tree_routes(router)
    _change_routes(router)
    return router
