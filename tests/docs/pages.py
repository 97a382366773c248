"""The README and the docs site's pages, read for their code blocks, headings and links.

A ```python block runs unless the line before it is ``<!-- not-run: reason -->``;
``<!-- with-server -->`` runs it against an ``lmc serve`` the tests start (its
``http://127.0.0.1:8765`` and ``token="..."`` become that server's). A ```sh block
runs, line by line, only after ``<!-- run -->``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown.extensions.toc import slugify  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

#: Where a code block of the docs is shown with a server's address and token.
SERVER_URL = "http://127.0.0.1:8765"
SERVER_TOKEN = 'token="..."'

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_MARKER = re.compile(r"<!--\s*(not-run|with-server|run)\b:?\s*(.*?)\s*-->")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*(?:\{[^}]*\})?\s*$")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its code and its marker."""

    path: Path
    line: int
    language: str
    code: str
    marker: str | None  # not-run, with-server, run, or None
    reason: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """The README and every page of docs/."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Every fenced code block of ``path``, with the marker on the line before it."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        found.append(
            Block(
                path=path,
                line=text.count("\n", 0, match.start()) + 1,
                language=match.group(1),
                code=match.group(2),
                marker=marker.group(1) if marker else None,
                reason=marker.group(2) if marker else "",
            )
        )
    return found


def all_blocks(language: str) -> list[Block]:
    return [b for path in pages() for b in blocks(path) if b.language == language]


def prose(path: Path) -> str:
    """``path`` without its fenced code blocks."""
    return _FENCE.sub("", path.read_text(encoding="utf-8"))


def anchors(path: Path) -> set[str]:
    """The anchors of ``path``'s headings, as the site's table of contents makes them."""
    found: set[str] = set()
    for line in prose(path).splitlines():
        heading = _HEADING.match(line)
        if heading:
            text = re.sub(r"`([^`]*)`", r"\1", heading.group(2))
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
            found.add(slugify(text, "-"))
    return found


def links(path: Path) -> list[str]:
    """The targets of ``path``'s Markdown links, outside code blocks."""
    return _LINK.findall(prose(path))
