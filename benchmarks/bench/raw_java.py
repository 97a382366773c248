"""The Java baseline: ``jshell`` driven directly on a pexpect PTY with a sentinel prompt.

:class:`RawJshell` is what a careful hand-written driver does: jshell with
the JVM flags lmc-runtime gives its own JVM (C1 only, UTF-8) and code in jshell's own JVM,
``TERM=dumb`` so nothing is echoed, and a quiet feedback mode whose prompt is
a sentinel; a statement is typed in and pexpect waits for the sentinel.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import pexpect

from .raw_shell import SentinelRepl
from .workloads import BenchError

__all__ = ["PRINT_ONE", "RawJshell"]

#: Code in jshell's own JVM (one JVM starts), C1 alone, UTF-8 whatever the locale.
JSHELL_FLAGS = (
    *("--execution", "local", "-J-XX:TieredStopAtLevel=1", "-J-Dfile.encoding=UTF-8"),
    *("-J-Dsun.stdout.encoding=UTF-8", "-J-Dsun.stderr.encoding=UTF-8", "--feedback", "lmc"),
)

#: The warm round trip's statement.
PRINT_ONE = "System.out.println(1);"
_SENTINEL = "__raw_jshell_ready__"
_MODE = f'/set mode lmc -quiet\n/set prompt lmc "{_SENTINEL}" ""\n'


class RawJshell(SentinelRepl):
    """``jshell`` on a PTY, driven with pexpect and a sentinel prompt."""

    def __init__(self, *, timeout: float = 60.0) -> None:
        jshell = shutil.which("jshell")
        if jshell is None:
            raise BenchError("jshell is not installed")
        self._folder = tempfile.TemporaryDirectory(prefix="lmc-raw-jshell-")
        mode = Path(self._folder.name) / "mode.jsh"
        mode.write_text(_MODE, encoding="utf-8")
        prefs = f"-J-Djava.util.prefs.userRoot={self._folder.name}"
        env = {**os.environ, "TERM": "dumb"}
        args = [*JSHELL_FLAGS, prefs, str(mode)]
        child = pexpect.spawn(jshell, args, echo=False, env=env, encoding="utf-8")
        super().__init__(child, "jshell", _SENTINEL, timeout)

    def answer(self, said: str) -> str:
        return said.replace(" \b", "").strip()

    def round_trips(self, n: int, timeout: float) -> list[float]:
        """``n`` timed round trips of :data:`PRINT_ONE`, in seconds."""
        self.run(PRINT_ONE, timeout=timeout)  # the first snippet warms the compiler
        return self.timed(PRINT_ONE, "1", n, timeout)

    def close(self) -> None:
        """End jshell and remove its folder; never raises."""
        super().close()
        with contextlib.suppress(OSError):
            self._folder.cleanup()
