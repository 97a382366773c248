"""``lmc mcp``: a Model Context Protocol server on the official ``mcp`` SDK.

MCP clients get the tools ``execute``, ``interrupt``, ``restart`` and
``languages`` (and ``read_file``, ``write_file``, ``list_files`` where the code
runs in a sandbox or a remote session), over stdio or streamable HTTP. The
modules that use the SDK import it; this package and :mod:`.command` do not,
so ``lmc mcp --help`` works without it and a run says what to install
(:class:`~lmc_runtime.errors.MissingExtra`).
"""

from __future__ import annotations

from .command import configure_parser, require_sdk, run_mcp

__all__ = ["configure_parser", "require_sdk", "run_mcp"]
