"""The shell baseline: bash driven directly on a pexpect PTY, and the same figure for us.

:class:`RawShell` is what a careful hand-written driver does: ``bash`` with no
rc files, echo off, and its prompt set to a sentinel; a command is typed in
and pexpect waits for the sentinel. :func:`ours_shell_round_trips` times the
same ``echo 1`` through lmc-runtime's ``Computer.arun``.
"""

from __future__ import annotations

import contextlib
import os
import time

import anyio
import pexpect

from lmc_runtime.computer import Computer
from lmc_runtime.replies import Status

from .workloads import BenchError, timed

__all__ = ["ECHO_ONE", "RawShell", "SentinelRepl", "ours_shell_round_trips"]

#: The warm round trip's command.
ECHO_ONE = "echo 1"
_SENTINEL = "__raw_shell_ready__"
_LANGUAGE = "shell"


class SentinelRepl:
    """A program on a PTY whose prompt is ``sentinel``: a line is typed, then the prompt
    awaited (pexpect). ``answer`` cleans what it printed for the check of ``expected``."""

    def __init__(self, child: pexpect.spawn, name: str, sentinel: str, timeout: float) -> None:
        self._child, self._name, self._sentinel = child, name, sentinel
        child.delaybeforesend = None  # pexpect's default waits 50 ms per send
        try:
            # The sentinel arrives once the prompt is set; what came before is noise.
            child.expect_exact(sentinel, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF) as exc:
            self.close()
            raise BenchError(f"raw {name} did not start: {exc}") from exc

    def run(self, code: str, *, timeout: float) -> str:
        """Type ``code``; return what it printed before the next prompt."""
        self._child.sendline(code)
        try:
            self._child.expect_exact(self._sentinel, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF) as exc:
            raise BenchError(f"raw {self._name} did not finish {code!r}: {exc}") from exc
        return str(self._child.before)

    def answer(self, said: str) -> str:
        return said.strip()

    def timed(self, code: str, expected: str, n: int, timeout: float) -> list[float]:
        """``n`` timed round trips of ``code``, in seconds; each must print ``expected``."""
        said: list[str] = []
        times = timed(lambda: said.append(self.run(code, timeout=timeout)), n)
        for out in said:
            if self.answer(out) != expected:
                raise BenchError(f"raw {self._name} answered {out!r} to {code!r}")
        return times

    def close(self) -> None:
        """End the program; never raises."""
        with contextlib.suppress(Exception):
            self._child.close(force=True)


class RawShell(SentinelRepl):
    """``bash`` on a PTY, driven with pexpect and a sentinel prompt."""

    def __init__(self, *, timeout: float = 30.0) -> None:
        env = {**os.environ, "TERM": "dumb"}
        args = ["--noprofile", "--norc", "--noediting", "-i"]
        child = pexpect.spawn("bash", args, echo=False, env=env, encoding="utf-8")
        child.sendline(f"PS1='{_SENTINEL}'; PS2=''; unset HISTFILE")
        super().__init__(child, "bash", _SENTINEL, timeout)

    def round_trips(self, n: int, timeout: float) -> list[float]:
        """``n`` timed ``echo 1`` round trips, in seconds."""
        return self.timed(ECHO_ONE, "1", n, timeout)


async def ours_shell_round_trips(computer: Computer, n: int, timeout: float) -> list[float]:
    """``n`` timed ``echo 1`` round trips through ``computer.arun``, in seconds.

    Runs inside the event loop that hosts ``computer``.
    """
    times = []
    for _ in range(n):
        output = []
        status = None
        with anyio.fail_after(timeout + 10):
            start = time.perf_counter()
            async for message in computer.arun(_LANGUAGE, ECHO_ONE, timeout=timeout):
                if message.format == "output":
                    output.append(str(message.content))
                elif message.is_final:
                    status = message.status
            times.append(time.perf_counter() - start)
        if status != Status.OK or "".join(output).strip() != "1":
            raise BenchError(f"lmc-runtime answered {output!r} ({status}) to {ECHO_ONE!r}")
    return times
