"""MkDocs hooks for the site (mkdocs.yml: hooks).

The docstrings the API reference is made from cross-reference in Sphinx's way
(:class:`~lmc_runtime.errors.UsageError`); Markdown shows the role's name as
text. This keeps the code and, for a ``~`` target, its last name only.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|attr|mod|obj|data|exc):<code>(~?)([^<]*)</code>")


def _shown(match: re.Match[str]) -> str:
    target = match.group(2)
    if match.group(1):
        target = target.rsplit(".", 1)[-1]
    return f"<code>{target}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    """The page's HTML with Sphinx roles in docstrings shown as code."""
    return _ROLE.sub(_shown, html)
