"""Where each ``lmc`` command is documented: the page of docs/ its ``--help`` ends with.

Until the docs are published as a site, the links are to the pages as the
repository shows them (the Homepage of pyproject.toml's ``[project.urls]``).
"""

from __future__ import annotations

__all__ = ["DOCS", "PAGES", "docs_link"]

#: The docs/ folder of the repository, on its main branch.
DOCS = "https://github.com/lmc-runtime/lmc-runtime/blob/main/docs/"

#: Each command (``lmc`` itself is "") and its page in docs/, with its section.
PAGES: dict[str, str] = {
    "": "cli.md",
    "run": "cli.md#lmc-run",
    "demo": "cli.md#lmc-demo",
    "languages": "cli.md#lmc-languages",
    "setup": "cli.md#lmc-setup",
    "bench": "performance.md#benchmark",
    "repl": "cli.md#lmc-repl",
    "env": "service/environments.md",
    "serve": "service/index.md",
    "mcp": "integrations.md#lmc-mcp-a-model-context-protocol-server",
}


def docs_link(command: str) -> str:
    """The line a command's ``--help`` ends with: ``docs: URL`` of its page."""
    return f"docs: {DOCS}{PAGES[command]}"
