"""Group commit for the folder store: appends are written at once and made
durable on a thread of their own, right after.

An append handed over here is already visible to readers and safe from a crash
of this process; it reaches the disk with the next fsync of its file, which
starts :data:`WINDOW` seconds after the first append it covers (or once the
previous fsync ends, if later). Appends that land meanwhile share it, so a busy
store pays one fsync per file per round (a run's code and its end, a few
milliseconds apart, one fsync), and no caller waits for the disk.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

__all__ = ["WINDOW", "GroupSync"]

logger = logging.getLogger(__name__)

#: How long (seconds) the appends an fsync covers are gathered before it starts.
WINDOW = 0.01


class GroupSync:
    """Fsyncs handed-over file descriptors on a thread of its own.

    :meth:`flush` waits until everything handed over so far is on disk;
    :meth:`close` flushes and ends the thread. An fsync that fails is logged and
    kept, and :meth:`failure` gives it (once) to the next caller that asks, so
    the store can say that earlier appends may not have reached the disk.
    """

    def __init__(self, name: str = "store-sync", window: float = WINDOW) -> None:
        self._name = name
        self._window = window
        #: Whether the thread gathers appends (a hand-over need not wake it then).
        self._gathering = False
        self._cond = threading.Condition()
        self._pending: dict[Path, int] = {}
        self._handed = 0
        self._synced = 0
        self._failure: OSError | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    def hand_over(self, path: Path, fd: int) -> None:
        """Make ``path``'s appends durable through ``fd``, which this now owns
        (after :meth:`close`: at once, raising the fsync's OSError)."""
        with self._cond:
            if self._closed:
                closed = True
            else:
                closed = False
                # One fsync of the file covers every append to it so far.
                earlier = self._pending.pop(path, None)
                if earlier is not None:
                    os.close(earlier)
                self._pending[path] = fd
                self._handed += 1
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()
                if not self._gathering:
                    self._cond.notify_all()
        if closed:  # after close: durable before the caller goes on
            failure = self._sync({path: fd})
            if failure is not None:
                raise failure

    def failure(self) -> OSError | None:
        """The first fsync that failed since the last call, if one did."""
        with self._cond:
            failure, self._failure = self._failure, None
        return failure

    def flush(self, timeout: float | None = None) -> bool:
        """Whether everything handed over until now reached the disk within ``timeout`` s."""
        with self._cond:
            target = self._handed
            return self._cond.wait_for(lambda: self._synced >= target, timeout)

    def close(self) -> None:
        """Flush, then end the thread; later hand-overs are synced by their caller."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._closed)
                if not self._pending:
                    return
                self._gathering = True
                self._cond.wait_for(lambda: self._closed, self._window)
                self._gathering = False
                batch, self._pending = self._pending, {}
                upto = self._handed
            failure = self._sync(batch)
            with self._cond:
                self._synced = upto
                self._failure = self._failure or failure
                self._cond.notify_all()

    @staticmethod
    def _sync(batch: dict[Path, int]) -> OSError | None:
        failure: OSError | None = None
        for path, fd in batch.items():
            try:
                os.fsync(fd)
            except OSError as exc:
                logger.error("%s: appended lines may not have reached the disk: %s", path, exc)
                failure = failure or exc
            finally:
                os.close(fd)
        return failure
