"""The terminal while code runs: no echo of keys typed ahead, Ctrl-C still a signal.

Between prompts the terminal is in its normal mode, so keys typed while code
runs would be echoed into the middle of the output. Turning off echo and line
buffering (but not ISIG) keeps the display clean; the keys wait in the
terminal's buffer for the next prompt, and Ctrl-C still sends SIGINT.
"""

from __future__ import annotations

import contextlib
import logging
import os
import termios
from collections.abc import Iterator

__all__ = ["quiet_typeahead"]

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def quiet_typeahead(fd: int | None) -> Iterator[None]:
    """Turn off echo and canonical mode on terminal ``fd`` (if it is one) for the block."""
    if fd is None or not os.isatty(fd):
        yield
        return
    try:
        saved = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~(termios.ECHO | termios.ICANON)
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except termios.error as exc:
        logger.info("terminal modes unchanged: %s", exc)
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)
