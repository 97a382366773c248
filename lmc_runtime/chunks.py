"""Open Interpreter's chunk framing, under its documented name: the module is
:mod:`lmc_runtime.adapters.chunks`."""

from __future__ import annotations

from .adapters.chunks import ChunkAssembler, aiter_chunks, from_chunks, iter_chunks, to_chunks

__all__ = ["ChunkAssembler", "aiter_chunks", "from_chunks", "iter_chunks", "to_chunks"]
