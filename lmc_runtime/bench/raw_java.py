"""The Java baseline: ``jshell`` driven directly on a pexpect PTY with a sentinel prompt.

:class:`RawJshell` is what a careful hand-written driver does: jshell with the
same JVM flags as lmc-runtime's (code in jshell's own JVM, C1 only, UTF-8),
``TERM=dumb`` so nothing is echoed, and a quiet feedback mode whose prompt is
a sentinel; a statement is typed in and pexpect waits for the sentinel.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import pexpect

from ..backends.java.backend import JSHELL_FLAGS
from .workloads import BenchError

__all__ = ["PRINT_ONE", "RawJshell"]

#: The warm round trip's statement.
PRINT_ONE = "System.out.println(1);"
_SENTINEL = "__raw_jshell_ready__"
_MODE = f'/set mode lmc -quiet\n/set prompt lmc "{_SENTINEL}" ""\n'


class RawJshell:
    """``jshell`` on a PTY, driven with pexpect and a sentinel prompt."""

    def __init__(self, *, timeout: float = 60.0) -> None:
        jshell = shutil.which("jshell")
        if jshell is None:
            raise BenchError("jshell is not installed")
        self._folder = tempfile.TemporaryDirectory(prefix="lmc-raw-jshell-")
        mode = Path(self._folder.name) / "mode.jsh"
        mode.write_text(_MODE, encoding="utf-8")
        prefs = f"-J-Djava.util.prefs.userRoot={self._folder.name}"
        self._child = pexpect.spawn(
            jshell,
            [*JSHELL_FLAGS, prefs, str(mode)],
            echo=False,
            env={**os.environ, "TERM": "dumb"},
            encoding="utf-8",
        )
        self._child.delaybeforesend = None  # pexpect's default waits 50 ms per send
        try:
            self._child.expect_exact(_SENTINEL, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF) as exc:
            self.close()
            raise BenchError(f"raw jshell did not start: {exc}") from exc

    def run(self, code: str, *, timeout: float) -> str:
        """Type ``code``; return what it printed before the next prompt."""
        self._child.sendline(code)
        try:
            self._child.expect_exact(_SENTINEL, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF) as exc:
            raise BenchError(f"raw jshell did not finish {code!r}: {exc}") from exc
        return str(self._child.before)

    def round_trips(self, n: int, timeout: float) -> list[float]:
        """``n`` timed round trips of :data:`PRINT_ONE`, in seconds."""
        self.run(PRINT_ONE, timeout=timeout)  # the first snippet warms the compiler
        times = []
        for _ in range(n):
            start = time.perf_counter()
            out = self.run(PRINT_ONE, timeout=timeout)
            times.append(time.perf_counter() - start)
            if out.replace(" \b", "").strip() != "1":
                raise BenchError(f"raw jshell answered {out!r} to {PRINT_ONE!r}")
        return times

    def close(self) -> None:
        """End jshell and remove its folder; never raises."""
        with contextlib.suppress(Exception):
            self._child.close(force=True)
        with contextlib.suppress(OSError):
            self._folder.cleanup()
