"""Removing a folder tree an interpreter (maybe a hostile one) could write.

:func:`remove_tree` walks the tree through descriptors, never following a link,
gives the owner back folders the code locked, tries every entry whatever happens
to the others, and says what it left.
"""

from __future__ import annotations

import errno
import functools
import itertools
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["remove_tree"]

logger = logging.getLogger(__name__)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: A descriptor of a folder that needs (and gives) no permission on it.
_PATH_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _unlock(parent: int, name: str) -> None:
    """Give the owner back the folder ``name`` in ``parent`` (0o700), which the
    code may have made unsearchable (000) or unwritable (0555): chmod through an
    ``O_PATH`` descriptor of that very folder (never a link), by its
    ``/proc/self/fd`` entry, as ``fchmod`` refuses such a descriptor."""
    fd = os.open(name, _PATH_FLAGS, dir_fd=parent)
    try:
        os.chmod(f"/proc/self/fd/{fd}", 0o700)
    finally:
        os.close(fd)


def _retry(fd: int, action: Callable[[], object], name: str | None = None) -> None:
    """``action`` (on an entry of the folder ``fd``); if permissions stop it,
    again once the folder (and the folder ``name`` in it) is the owner's."""
    try:
        action()
    except PermissionError:
        os.fchmod(fd, 0o700)
        if name is not None:
            _unlock(fd, name)
        action()


class _Removal:
    """One :func:`remove_tree`: its top folder, held open, and what could not go."""

    def __init__(self, top: int) -> None:
        self.top, self.left, self.failures = top, list[str](), 0
        self.names = (f".lmc-rm-{n}" for n in itertools.count())

    def failed(self, where: str, exc: OSError) -> None:
        self.failures += 1
        if len(self.left) < 10:
            self.left.append(f"{where}: {exc.strerror or exc}")

    def _hoist(self, fd: int, name: str) -> str:
        moved = next(self.names)
        while os.path.lexists(f"/proc/self/fd/{self.top}/{moved}"):
            moved = next(self.names)  # left by an earlier attempt
        # Moving a folder elsewhere writes its "..": it must be writable too.
        _retry(fd, lambda: os.rename(name, moved, src_dir_fd=fd, dst_dir_fd=self.top), name)
        return moved

    def empty(self, fd: int, where: str, hoisted: list[str]) -> None:
        """Unlink what the folder ``fd`` holds; its folders are moved up into the
        top one (emptied in turn): depth never costs a descriptor."""
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    if not entry.is_dir(follow_symlinks=False):
                        _retry(fd, functools.partial(os.unlink, entry.name, dir_fd=fd))
                    else:
                        hoisted.append(
                            entry.name if fd == self.top else self._hoist(fd, entry.name)
                        )
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    self.failed(f"{where}/{entry.name}", exc)

    def remove(self, name: str, hoisted: list[str]) -> None:
        """Empty the folder ``name`` (in the top one) and remove it."""
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.top)
        except PermissionError:
            _unlock(self.top, name)
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.top)
        try:
            self.empty(fd, name, hoisted)
        finally:
            os.close(fd)
        _retry(self.top, lambda: os.rmdir(name, dir_fd=self.top))


def remove_tree(root: Path) -> list[str]:
    """Remove ``root`` and everything under it, without following a link and
    without recursion: a tree 10,000 folders deep (which the code in a sandbox
    can make) costs two descriptors and no stack. A link is just unlinked. A
    folder the code locked (000, 0555) is given back to its owner first.

    Every entry is tried, whatever happened to the others; what could not be
    removed is returned (and logged), the first few as ``path: reason``.
    """
    try:
        if not stat.S_ISDIR(root.lstat().st_mode):
            root.unlink(missing_ok=True)
            return []
        top = os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        return []
    except OSError as exc:  # swapped for a link since: leave it
        return _report(root, [f"{root}: {exc.strerror or exc}"], 1)
    removal, hoisted = _Removal(top), list[str]()
    try:
        removal.empty(top, ".", hoisted)
        while hoisted:
            name = hoisted.pop()
            try:
                removal.remove(name, hoisted)
            except FileNotFoundError:
                pass
            except OSError as exc:
                if exc.errno != errno.ENOTEMPTY:  # else its entries said why
                    removal.failed(name, exc)
    finally:
        os.close(top)
    try:
        root.rmdir()
    except OSError as exc:
        if not removal.left:
            removal.failed(str(root), exc)
    return _report(root, removal.left, removal.failures)


def _report(root: Path, left: list[str], failures: int) -> list[str]:
    if failures > len(left):
        left = [*left, f"and {failures - len(left)} more"]
    if left:
        logger.warning("cannot remove all of %s: %s", root, "; ".join(left))
    return left
