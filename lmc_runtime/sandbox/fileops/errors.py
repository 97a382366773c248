"""What the files operations refuse, each error a sentence for the caller.

They know nothing of HTTP: the service maps them to a status and a code by
class, in one place (:mod:`lmc_runtime.service.problems`); MCP's tools say them
as they are.
"""

from __future__ import annotations

from ...errors import LMCError
from ...errors.runtime import templated

__all__ = [
    "AlreadyExists",
    "BadDestination",
    "FileOpError",
    "IsADirectory",
    "NoSuchFile",
    "NotADirectory",
    "NotEmpty",
    "Refused",
]


class FileOpError(LMCError):
    """A files operation refused; ``path`` is the session-relative path it names."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message

    def __post_init__(self) -> None:
        super().__post_init__()
        self.message = str(self)


@templated
class NoSuchFile(FileOpError, LookupError):
    """Nothing has this path in the session's folder."""

    path: str
    template = "no file {path!r} in the session"


@templated
class AlreadyExists(FileOpError):
    """The path already names a file or folder, and nothing may replace it."""

    path: str
    template = "{path!r} already exists"


@templated
class NotEmpty(FileOpError):
    """A folder that still holds entries, where only an empty one will do."""

    path: str
    template = "{path!r} is a directory that is not empty"


@templated
class NotADirectory(FileOpError):
    """The path, or a component on its way, names a file where a folder is needed."""

    path: str
    template = "{path!r} is not a directory, or goes through a file"


@templated
class IsADirectory(FileOpError):
    """The path names a folder where a file is needed."""

    path: str
    template = "{path!r} is a directory"


@templated
class Refused(FileOpError):
    """The path cannot be used safely (a link on the way, a FIFO...): ``reason``."""

    path: str
    reason: str
    template = "{path!r} {reason}"


@templated
class BadDestination(FileOpError, ValueError):
    """A move's destination that cannot be (inside what is moved): ``reason``."""

    path: str
    reason: str
    template = "{reason}"
