"""What the SQL stores share: text a database can hold, LIKE patterns, and
loading what was stored."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import MessageError
from ..messages import Message, parse_message

__all__ = ["escape_like", "load_messages", "metadata_of", "sql_text"]

logger = logging.getLogger(__name__)

#: Lone surrogates (not UTF-8) and NUL (which PostgreSQL's text refuses).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def sql_text(text: str) -> str:
    """``text`` as any SQL database can hold it: NUL and lone surrogates become U+FFFD.

    Only titles and the search column go through this; message bodies are
    stored as ASCII JSON, so their content comes back exactly.
    """
    return _UNSTORABLE.sub("\ufffd", text)


def escape_like(text: str) -> str:
    """``text`` matched literally by ``LIKE ... ESCAPE '\\'``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def metadata_of(text: str) -> dict[str, Any]:
    """A thread's stored metadata; empty (with a warning) when it is not a JSON object."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        logger.warning("a thread's metadata is not valid JSON; it reads as empty")
        return {}
    return data if isinstance(data, dict) else {}


def load_messages(bodies: Iterable[str]) -> Iterator[Message | None]:
    """Each stored body as a message; None (with a warning) for one that is not."""
    for body in bodies:
        try:
            yield parse_message(json.loads(body))
        except (ValueError, RecursionError, MessageError) as exc:
            logger.warning("skipped a stored message that does not load: %.200s", exc)
            yield None
