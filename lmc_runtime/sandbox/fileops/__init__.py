"""File operations on a session's directory from the host, safe against its code.

The session's code may be hostile: it can plant symbolic links and FIFOs, swap a
folder for a link between two calls, or fill a folder with millions of entries.
Every operation here opens from a descriptor of the working directory, walks
component by component with ``O_NOFOLLOW | O_DIRECTORY`` and does its last step
with a ``*at`` call relative to the parent's descriptor, so no path inside the
session is ever resolved by the kernel from the top, and no link is followed.

A symbolic link, FIFO, socket or device is refused on the way and as the
target; listings report them (``lstat``, never followed) as ``symlink`` or
``other``. Refusals are the errors of :mod:`.errors`, which the service maps
to HTTP by class.
"""

from __future__ import annotations

from ._move import move
from ._ops import MAX_ENTRIES, Listing, list_directory, make_directory, remove, stat_path
from ._walk import FileInfo
from ._write import InPlaceWrite
from .errors import (
    AlreadyExists,
    BadDestination,
    FileOpError,
    IsADirectory,
    NoSuchFile,
    NotADirectory,
    NotEmpty,
    Refused,
)

__all__ = [
    "MAX_ENTRIES",
    "AlreadyExists",
    "BadDestination",
    "FileInfo",
    "FileOpError",
    "InPlaceWrite",
    "IsADirectory",
    "Listing",
    "NoSuchFile",
    "NotADirectory",
    "NotEmpty",
    "Refused",
    "list_directory",
    "make_directory",
    "move",
    "remove",
    "stat_path",
]
