"""What an open Computer owns beyond its sessions (its folders, its lifeline), and
the close of a Computer its user dropped without closing.

Nothing a Computer starts outlives it: its interpreters are held by a
:class:`~.lifeline.Lifeline` (they end when the process that owns them ends,
however it ends), its folders are removed when it closes, at the interpreter's
exit if it is still open then, or else by the next Computer's start
(:func:`~.workdirs.sweep`: the owner that died cannot). A sync Computer that is
garbage collected unclosed is closed by :func:`close_dropped`.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import TaskGroup

from .closing import closing_task_group
from .lifeline import Lifeline
from .sessions import Sessions
from .workdirs import WorkDir, sweep

__all__ = ["Owned", "close_dropped", "lifespan"]

logger = logging.getLogger(__name__)

#: How long closing the lifeline (reaping its watcher) may take.
_WATCHER_BOUND = 5.0


class Owned:
    """An open Computer's folders and lifeline: a fresh work folder unless
    ``work_dir`` is given (the caller's, left in place), and a spill folder if
    ``spill``. Made by :meth:`open`, ended by :meth:`aclose`."""

    def __init__(self, work_dir: Path | None, spill: bool) -> None:
        self.lifeline = Lifeline()
        self._folders: list[WorkDir] = []
        if work_dir is None:
            self._folders.append(WorkDir())
            work_dir = self._folders[-1].path
        else:
            work_dir.mkdir(parents=True, exist_ok=True)
        self.work_dir = work_dir
        self.spill_dir: Path | None = None
        if spill:
            self._folders.append(WorkDir("output-"))
            self.spill_dir = self._folders[-1].path
        atexit.register(self.abandon)

    @classmethod
    async def open(cls, work_dir: Path | None, spill: bool) -> Owned:
        """Remove what owners that died left (see :func:`~.workdirs.sweep`), then own
        anew; a Computer that makes no folder of its own there leaves that to others."""
        if work_dir is None or spill:
            await anyio.to_thread.run_sync(sweep)
        return await anyio.to_thread.run_sync(cls, work_dir, spill)

    def abandon(self) -> None:
        """At the interpreter's exit with the Computer still open: its interpreters
        end (the lifeline is cut), then its folders go."""
        self.lifeline.cut()
        self._remove()

    async def aclose(self) -> None:
        """Once the sessions are closed: reap the watcher, remove the folders."""
        atexit.unregister(self.abandon)
        with anyio.move_on_after(_WATCHER_BOUND):
            await self.lifeline.aclose()
        await anyio.to_thread.run_sync(self._remove)

    def _remove(self) -> None:
        for folder in self._folders:
            folder.remove()


class _Host(Protocol):
    def _opened(self, owned: Owned, task_group: TaskGroup | None) -> None: ...


def _tell(ref: weakref.ref[_Host], owned: Owned, task_group: TaskGroup | None) -> None:
    host = ref()
    if host is not None:
        host._opened(owned, task_group)


@asynccontextmanager
async def lifespan(
    ref: weakref.ref[_Host], sessions: Sessions, work_dir: Path | None, spill: bool
) -> AsyncIterator[None]:
    """An open Computer (``ref``, held weakly): what it owns (see :class:`Owned`) and
    the task group of its ``sessions``, closed with it; ``_opened`` tells it each."""
    owned = await Owned.open(work_dir, spill)
    try:
        async with closing_task_group(sessions.close) as tg:
            _tell(ref, owned, tg)
            yield
    finally:
        with anyio.CancelScope(shield=True):
            await owned.aclose()
        _tell(ref, owned, None)


def close_dropped(sync: ExitStack) -> None:
    """Close a sync Computer nobody refers to any more (its portal's ``sync``
    stack): the garbage collector calls this in whatever thread it runs, maybe
    the portal's own, which the close waits for, so it is done in a thread of
    its own."""
    closer = threading.Thread(target=_close, args=(sync,), name="lmc-close-dropped", daemon=True)
    try:
        closer.start()
    except RuntimeError:  # the interpreter is exiting: its lifeline ends the interpreters
        logger.debug("a dropped Computer was not closed: the interpreter is exiting")


def _close(sync: ExitStack) -> None:
    try:
        sync.close()
    except Exception:
        logger.warning("closing a Computer that was dropped unclosed failed", exc_info=True)
