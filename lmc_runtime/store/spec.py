"""Which thread store a setting names: :func:`open_store`."""

from __future__ import annotations

from pathlib import Path

from ..errors import StoreError
from .base import ThreadStore
from .jan import JanThreadStore

__all__ = ["CONNECTION_WAIT", "POSTGRES_SCHEMES", "open_store"]

#: The URL schemes that name a PostgreSQL database.
POSTGRES_SCHEMES = ("postgresql://", "postgres://")

#: How long a call waits for a pooled PostgreSQL connection (seconds): an append
#: takes milliseconds, so a longer wait means the database is gone, and a run's
#: end should not wait long to learn it.
CONNECTION_WAIT = 5.0


def open_store(
    spec: str | None, data_dir: Path | str, *, group_commit: bool = False
) -> ThreadStore:
    """The store ``spec`` names, opened.

    None (or an empty string): the Jan folder layout under ``data_dir``, with
    ``group_commit`` (see :class:`~lmc_runtime.store.jan.JanThreadStore`). A
    ``postgresql://`` or ``postgres://`` URL: a
    :class:`~lmc_runtime.store.postgres.PostgresThreadStore` waiting at most
    :data:`CONNECTION_WAIT` for a connection (MissingExtra without the
    ``[postgres]`` extra). Anything else, or a store that cannot
    be opened: StoreError, whose one line never shows a password.
    """
    if not spec:
        return JanThreadStore(data_dir, group_commit=group_commit)
    if spec.lower().startswith(POSTGRES_SCHEMES):
        from .postgres import PostgresThreadStore

        return PostgresThreadStore(spec, timeout=CONNECTION_WAIT)
    scheme, sep, _ = spec.partition("://")
    shown = f"'{scheme}://...'" if sep else "(not a URL)"
    raise StoreError(
        f"unknown thread store {shown}: give a postgresql:// URL, "
        "or none for the Jan folder in the data directory"
    )
