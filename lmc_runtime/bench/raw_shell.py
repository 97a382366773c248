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

from ..computer import Computer
from ..replies import Status
from .workloads import BenchError

__all__ = ["ECHO_ONE", "RawShell", "ours_shell_round_trips"]

#: The warm round trip's command.
ECHO_ONE = "echo 1"
_SENTINEL = "__raw_shell_ready__"
_LANGUAGE = "shell"


class RawShell:
    """``bash`` on a PTY, driven with pexpect and a sentinel prompt."""

    def __init__(self, *, timeout: float = 30.0) -> None:
        env = {**os.environ, "TERM": "dumb"}
        self._child = pexpect.spawn(
            "bash",
            ["--noprofile", "--norc", "--noediting", "-i"],
            echo=False,
            env=env,
            encoding="utf-8",
        )
        self._child.delaybeforesend = None  # pexpect's default waits 50 ms per send
        self._child.sendline(f"PS1='{_SENTINEL}'; PS2=''; unset HISTFILE")
        try:
            # The sentinel arrives once the prompt is set; what came before is noise.
            self._child.expect_exact(_SENTINEL, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF) as exc:
            self.close()
            raise BenchError(f"raw bash did not start: {exc}") from exc

    def run(self, command: str, *, timeout: float) -> str:
        """Type ``command``; return what it printed before the next prompt."""
        self._child.sendline(command)
        try:
            self._child.expect_exact(_SENTINEL, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF) as exc:
            raise BenchError(f"raw bash did not finish {command!r}: {exc}") from exc
        return str(self._child.before)

    def round_trips(self, n: int, timeout: float) -> list[float]:
        """``n`` timed ``echo 1`` round trips, in seconds."""
        times = []
        for _ in range(n):
            start = time.perf_counter()
            out = self.run(ECHO_ONE, timeout=timeout)
            times.append(time.perf_counter() - start)
            if out.strip() != "1":
                raise BenchError(f"raw bash answered {out!r} to {ECHO_ONE!r}")
        return times

    def close(self) -> None:
        """End the shell; never raises."""
        with contextlib.suppress(Exception):
            self._child.close(force=True)


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
