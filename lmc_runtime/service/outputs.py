"""``GET /v1/sessions/{id}/outputs/{name}``: the whole output of a run that the
output budget cut, as the truncation marker and ``extras.output_path`` name it.

The files live in the session's output folder, which only the host writes (the
sandbox never sees it); the name is one plain component, and the file is still
opened from the folder's descriptor without following a link.
"""

from __future__ import annotations

import re
from typing import IO

import anyio
from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from ..errors import LMCError
from ..sandbox import open_in_session
from .errors import BadPath, SessionFileNotFound
from .routes import _ERRORS
from .state import service_of
from .streams import streamed_file

__all__ = ["output_routes"]

#: What the output budget names its files: letters, digits, '-' and '_', then '.txt'.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,200}\.txt")


def output_routes(router: APIRouter) -> None:
    """Add the saved outputs' route to ``router`` (under ``/v1/sessions``)."""

    @router.get(
        "/{session_id}/outputs/{name}",
        responses={**_ERRORS, 200: {"content": {"text/plain": {}}}},
        response_class=Response,
    )
    async def saved_output(request: Request, session_id: str, name: str) -> StreamingResponse:
        """The whole output of a cut run, as its truncation marker names it."""
        session = service_of(request).manager.get(session_id)
        if not _NAME.fullmatch(name):
            raise BadPath(name, f"not the name of a saved output: {name!r}")
        folder = session.sandbox.output_dir
        try:
            handle: IO[bytes] = await anyio.to_thread.run_sync(
                lambda: open_in_session(folder, name, "rb")
            )
        except (OSError, LMCError) as exc:
            raise SessionFileNotFound(f"outputs/{name}") from exc
        session.touch()

        return streamed_file(handle, "text/plain; charset=utf-8")
