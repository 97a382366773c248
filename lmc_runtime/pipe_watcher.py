"""A watcher process on a pipe: a Python script started in a session of its own
(so that what ends this process's group or session spares it), whose stdin is a
pipe only this process writes. The pipe ends when this process closes it or
dies, however it dies, and the watcher then does its work: the interpreters'
lifeline (:mod:`.lifeline`) and the server's reaper of sessions
(:mod:`.service.reaper`) are two."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["start_watcher"]

logger = logging.getLogger(__name__)


def start_watcher(
    script: Path, *args: str, failure: str, quiet: bool = False
) -> tuple[subprocess.Popen[bytes], int] | None:
    """``python -I -S script args`` on a new pipe: the process and the pipe's
    write end; None, with ``failure`` logged as a warning, if it cannot start.
    ``quiet``: its stderr goes nowhere (else it shares this process's)."""
    read, write = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(script), *args],
            stdin=read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL if quiet else None,
            start_new_session=True,
        )
    except (OSError, ValueError):
        logger.warning(failure, exc_info=True)
        os.close(write)
        return None
    finally:
        os.close(read)
    return process, write
