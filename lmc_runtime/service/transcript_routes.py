"""``GET /v1/transcripts``: the sessions' runs, read back from the transcript
store (the Jan folder, SQLite or PostgreSQL), for the console and any client."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Query, Request

from ..errors import StoreError, ThreadNotFound
from ..store.base import validate_thread_id
from .errors import ServiceUnavailable, SessionNotFound
from .routes import require_token
from .state import service_of

__all__ = ["transcripts_router"]

#: The most threads one listing returns (the newest), and messages one read returns.
MAX_THREADS = 1000
MAX_MESSAGES = 5000


def _thread(thread: Any) -> dict[str, Any]:
    return {
        "id": thread.id,
        "title": thread.title,
        "created_at": thread.created_at,
        "metadata": thread.metadata,
    }


def transcripts_router() -> APIRouter:
    """The transcripts' routes, behind the bearer token."""
    router = APIRouter(prefix="/v1/transcripts", dependencies=[Depends(require_token)])

    @router.get("")
    async def list_transcripts(
        request: Request, limit: Annotated[int, Query(ge=1, le=MAX_THREADS)] = 200
    ) -> dict[str, Any]:
        """The newest ``limit`` transcripts, newest first: one per session."""
        store = service_of(request).manager.transcripts.store
        try:
            threads = await anyio.to_thread.run_sync(store.list)
        except StoreError as exc:
            raise ServiceUnavailable(f"the transcript store: {exc}") from exc
        newest = list(reversed(threads))
        return {
            "transcripts": [_thread(t) for t in newest[:limit]],
            "truncated": len(newest) > limit,
        }

    @router.get("/{session_id}")
    async def get_transcript(
        request: Request,
        session_id: str,
        limit: Annotated[int, Query(ge=1, le=MAX_MESSAGES)] = 1000,
    ) -> dict[str, Any]:
        """A session's transcript: its code messages and their replies, the last
        ``limit`` of them, in order."""
        store = service_of(request).manager.transcripts.store
        try:
            validate_thread_id(session_id)
        except (ValueError, StoreError):
            raise SessionNotFound(session_id) from None

        def read() -> tuple[Any, list[Any]]:
            return store.get(session_id), store.messages(session_id)

        try:
            thread, messages = await anyio.to_thread.run_sync(read)
        except ThreadNotFound:
            raise SessionNotFound(session_id) from None
        except StoreError as exc:
            raise ServiceUnavailable(f"the transcript store: {exc}") from exc
        return {
            **_thread(thread),
            "messages": [m.to_dict() for m in messages[-limit:]],
            "truncated": len(messages) > limit,
        }

    return router
