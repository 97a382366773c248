"""What the files operations refuse, each error a sentence for the caller.

They know nothing of HTTP: the service maps them to a status and a code by
class, in one place (:mod:`lmc_runtime.service.problems`); MCP's tools say them
as they are.
"""

from __future__ import annotations

from ...errors import LMCError

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


class NoSuchFile(FileOpError, LookupError):
    """Nothing has this path in the session's folder."""

    def __init__(self, path: str) -> None:
        super().__init__(path, f"no file {path!r} in the session")


class AlreadyExists(FileOpError):
    """The path already names a file or folder, and nothing may replace it."""

    def __init__(self, path: str) -> None:
        super().__init__(path, f"{path!r} already exists")


class NotEmpty(FileOpError):
    """A folder that still holds entries, where only an empty one will do."""

    def __init__(self, path: str) -> None:
        super().__init__(path, f"{path!r} is a directory that is not empty")


class NotADirectory(FileOpError):
    """The path, or a component on its way, names a file where a folder is needed."""

    def __init__(self, path: str) -> None:
        super().__init__(path, f"{path!r} is not a directory, or goes through a file")


class IsADirectory(FileOpError):
    """The path names a folder where a file is needed."""

    def __init__(self, path: str) -> None:
        super().__init__(path, f"{path!r} is a directory")


class Refused(FileOpError):
    """The path cannot be used safely (a link on the way, a FIFO...): ``reason``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, f"{path!r} {reason}")
        self.reason = reason


class BadDestination(FileOpError, ValueError):
    """A move's destination that cannot be (inside what is moved): ``reason``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.reason = reason
