"""envd's files over HTTP: ``GET /files?path=`` (download) and ``POST /files``
(upload: ``multipart/form-data`` with one or several files, or, from envd
0.5.7, the body itself as ``application/octet-stream``, gzip or not).

Uploads are read as they stream in and written in place
(:class:`~lmc_runtime.sandbox.fileops.InPlaceWrite`: no link followed, the
folders on the way made), each file at most the session's file size limit and
the server's upload limit; the session's disk limit holds as for its code.
Paths as :mod:`.paths` reads them. Errors in E2B's shape.
"""

from __future__ import annotations

import zlib
from typing import IO, Any

import anyio
from python_multipart.exceptions import ParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from ...sandbox import fileops, open_in_session
from ...service.errors import DiskLimitExceeded, RequestTooLarge
from ...service.streams import streamed_file
from ..door import door_of, sandbox_of
from ..errors import E2BError
from ..registry import E2BSandbox
from .entries import METADATA_PREFIX
from .paths import inside, relpath_of, user_of

__all__ = ["download", "upload"]

#: The most files one multipart upload may carry.
MAX_FILES = 1000
#: envd's bounds on an upload's metadata (``X-Metadata-<key>`` headers).
_METADATA_HEADER = "x-metadata-"
_MAX_KEY = 246
_MAX_METADATA_BYTES = 4096


def _printable(text: str) -> bool:
    return all(" " <= char <= "~" for char in text)


def metadata_of(request: Request) -> dict[str, str]:
    """The metadata an upload asks for (envd 0.6.2): printable ASCII, bounded."""
    found: dict[str, str] = {}
    for name, value in request.headers.items():
        if not name.startswith(_METADATA_HEADER) or name in found:
            continue
        key = name[len(_METADATA_HEADER) :]
        if not key or len(key) > _MAX_KEY or not _printable(key) or not _printable(value):
            raise E2BError(f"invalid metadata {name[:60]!r}: printable ASCII only", 400)
        found.setdefault(key, value)
    size = sum(len(METADATA_PREFIX) + len(k) + len(v) for k, v in found.items())
    if size > _MAX_METADATA_BYTES:
        raise E2BError(f"the metadata is larger than {_MAX_METADATA_BYTES} bytes", 400)
    return found


def _limit(request: Request, sandbox: E2BSandbox) -> int:
    limit = door_of(request).service.settings.max_upload_bytes
    file_limit = sandbox.session.policy.limits.file_size_bytes
    return limit if file_limit is None else min(limit, file_limit)


async def download(request: Request) -> Response:
    """The file at ``?path=``, streamed."""
    sandbox = sandbox_of(request)
    user_of(request)
    relpath = relpath_of(request.query_params.get("path", ""), allow_home=False)
    root = sandbox.session.sandbox.work_dir
    handle: IO[bytes] = await anyio.to_thread.run_sync(lambda: open_in_session(root, relpath, "rb"))
    sandbox.session.touch()
    response = streamed_file(handle, "application/octet-stream")
    name = relpath.rsplit("/", 1)[-1].encode("ascii", "replace").decode().replace('"', "_")
    response.headers["content-disposition"] = f'attachment; filename="{name}"'
    return response


class _Files:
    """The files of one upload, each written as its bytes come (in a worker thread)."""

    def __init__(
        self, sandbox: E2BSandbox, limit: int, room: int | None, metadata: dict[str, str]
    ) -> None:
        self.sandbox = sandbox
        self.limit = limit
        #: What the whole upload may still write on the session's disk (None: unbounded here).
        self.room = room
        self.metadata = metadata
        self.written: list[dict[str, Any]] = []
        self.current: fileops.InPlaceWrite | None = None

    def begin(self, relpath: str) -> None:
        if len(self.written) >= MAX_FILES:
            raise E2BError(f"an upload may carry {MAX_FILES} files at the most", 400)
        work = self.sandbox.session.sandbox
        self.current = fileops.InPlaceWrite(work.work_dir, relpath, work.owner)
        self.current.open()
        try:
            self.current.replace_attributes(METADATA_PREFIX, self.metadata)
        except OSError as exc:
            if self.metadata:
                why = f"the file's metadata cannot be kept here: {exc.strerror}"
                raise E2BError(why, 400) from None

    def data(self, piece: bytes) -> None:
        if self.current is None:
            return
        if self.current.size + len(piece) > self.limit:
            raise RequestTooLarge("upload", self.limit)
        if self.room is not None:
            if len(piece) > self.room:
                raise DiskLimitExceeded(inside(self.current.relpath))
            self.room -= len(piece)
        self.current.write(piece)

    def end(self) -> None:
        current, self.current = self.current, None
        if current is None:
            return
        current.close()
        where = inside(current.relpath)
        written: dict[str, Any] = {"name": where.rsplit("/", 1)[-1], "type": "file", "path": where}
        if self.metadata:
            written["metadata"] = dict(self.metadata)
        self.written.append(written)

    def abort(self) -> None:
        current, self.current = self.current, None
        if current is not None:
            current.close(failed=True)


class _Parts:
    """python-multipart's callbacks, writing each file part into :class:`_Files`."""

    def __init__(self, files: _Files, path: str | None) -> None:
        self.files = files
        self.path = path
        self._headers: dict[bytes, bytes] = {}
        self._field = b""
        self._value = b""
        self.error: BaseException | None = None

    def callbacks(self) -> dict[str, Any]:
        return {
            "on_part_begin": self._begin,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_done,
            "on_part_data": self._data,
            "on_part_end": self.files.end,
        }

    def _begin(self) -> None:
        self._headers = {}

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._field.lower()] = self._value
        self._field, self._value = b"", b""

    def _headers_done(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        filename = options.get(b"filename")
        if filename is None:
            return  # a field, not a file: skipped
        if self.path is not None:
            if self.files.written:
                raise E2BError("with ?path=, an upload carries one file", 400)
            target = self.path
        else:
            target = filename.decode("utf-8", "surrogateescape")
        self.files.begin(relpath_of(target, allow_home=False))

    def _data(self, data: bytes, start: int, end: int) -> None:
        self.files.data(data[start:end])


async def _stream(request: Request) -> Any:
    try:
        async for chunk in request.stream():
            yield chunk
    except ClientDisconnect:
        raise E2BError("the client left before the upload ended", 400) from None


async def _multipart(request: Request, files: _Files, path: str | None, boundary: bytes) -> None:
    parts = _Parts(files, path)
    parser = MultipartParser(boundary, parts.callbacks())  # type: ignore[arg-type]
    try:
        async for chunk in _stream(request):
            await anyio.to_thread.run_sync(parser.write, chunk)
        await anyio.to_thread.run_sync(parser.finalize)
    except ParseError as exc:
        raise E2BError(f"the multipart body is malformed: {exc}", 400) from None
    if files.current is not None:
        raise E2BError("the multipart body ends inside a file", 400)


async def _octet_stream(request: Request, files: _Files, path: str | None) -> None:
    if not path:
        raise E2BError("an application/octet-stream upload names its file with ?path=", 400)
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise E2BError(f"unknown Content-Encoding {encoding[:40]!r}; use gzip", 400)
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS) if encoding == "gzip" else None
    await anyio.to_thread.run_sync(files.begin, relpath_of(path, allow_home=False))
    async for chunk in _stream(request):
        if inflater is not None:
            try:
                # At most one byte past the limit out of each piece: a bomb stays small.
                chunk = inflater.decompress(chunk, files.limit + 1)
            except zlib.error as exc:
                raise E2BError(f"the gzip body is corrupt: {exc}", 400) from None
            if inflater.unconsumed_tail:
                raise RequestTooLarge("upload", files.limit)
        if chunk:
            await anyio.to_thread.run_sync(files.data, chunk)
    if inflater is not None and not inflater.eof:
        raise E2BError("the gzip body ends early", 400)
    await anyio.to_thread.run_sync(files.end)


async def upload(request: Request) -> Response:
    """Write the uploaded files; their paths as the sandbox sees them."""
    sandbox = sandbox_of(request)
    user_of(request)
    path = request.query_params.get("path") or None
    limit, metadata = _limit(request, sandbox), metadata_of(request)
    files = _Files(sandbox, limit, await sandbox.session.sandbox.disk_room(), metadata)
    kind, options = parse_options_header(request.headers.get("content-type", ""))
    try:
        if kind == b"multipart/form-data":
            boundary = options.get(b"boundary")
            if not boundary:
                raise E2BError("the multipart body has no boundary", 400)
            await _multipart(request, files, path, boundary)
        else:
            await _octet_stream(request, files, path)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(files.abort)
    sandbox.session.touch()
    if not files.written:
        raise E2BError("the upload carries no file", 400)
    return JSONResponse(files.written)
