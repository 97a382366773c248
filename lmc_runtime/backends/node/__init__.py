"""JavaScript on node, through ``kernels/lmc-node/runner.js``."""

from __future__ import annotations

from .backend import NodeBackend

__all__ = ["NodeBackend"]
