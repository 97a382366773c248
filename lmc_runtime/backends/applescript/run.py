"""One process, one execution: its output streamed, its deadline enforced.

A :class:`ProcessRun` owns a started process (in its own process group). Its
:meth:`drive` task, which runs in the session's task group, reads stdout and
stderr as they come, and keeps the deadline whatever pace the caller reads
at: on a timeout or an interrupt, SIGINT goes to the process group; if the
process is still there after ``interrupt_grace`` seconds, SIGKILL follows.
When the process ends, whatever else is left in its group is killed too, and
the run ends with a notice if needed and ``active_line`` null.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ... import replies
from ...messages import Message
from ..base import ExecutionOptions
from ..turns import first_of

__all__ = ["ProcessRun", "describe_returncode"]

logger = logging.getLogger(__name__)

_BUFFER = 64

_STOP_WORDS = {"timeout": "timed out", "interrupt": "was interrupted"}


def describe_returncode(program: str, code: int) -> str:
    """A sentence for how ``program`` ended, from its return code."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"{program} was killed by {name}"
    return f"{program} exited with code {code}"


def _kill_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class ProcessRun:
    """A started process and the messages of its one execution."""

    def __init__(self, program: str, process: Process, options: ExecutionOptions) -> None:
        self.program = program
        self.process = process
        self.options = options
        self.reply_to = options.reply_to
        self.deadline = (
            anyio.current_time() + options.timeout if options.timeout is not None else float("inf")
        )
        self.stop_reason: str | None = None
        self.killed = False
        self._stop = anyio.Event()
        self._exited = anyio.Event()
        send, receive = anyio.create_memory_object_stream[Message](_BUFFER)
        self._send: MemoryObjectSendStream[Message] = send
        self.receive: MemoryObjectReceiveStream[Message] = receive

    # -- control from other tasks ---------------------------------------------

    def request_stop(self, reason: str) -> None:
        """Start the ladder: SIGINT to the group now, SIGKILL after the grace period."""
        if self.stop_reason is None and not self._exited.is_set():
            self.stop_reason = reason
            _kill_group(self.process.pid, signal.SIGINT)
            self._stop.set()

    async def drive(self, on_finished: Callable[[], None]) -> None:
        """Stream the output, enforce the deadline, then send the closing messages.

        ``on_finished`` is called once the process has ended (perhaps more than once).
        """
        try:
            async with self._send:
                async with anyio.create_task_group() as tg:
                    assert self.process.stdout is not None and self.process.stderr is not None
                    tg.start_soon(self._pump, self.process.stdout, "stdout")
                    tg.start_soon(self._pump, self.process.stderr, "stderr")
                    tg.start_soon(self._watchdog)
                    code = await self.process.wait()
                    self._exited.set()
                    # Children still holding the pipes would keep the run open.
                    _kill_group(self.process.pid, signal.SIGKILL)
                    # The process is gone: the session is free, however slowly
                    # the caller reads what is left.
                    on_finished()
                for message in self._closing(code):
                    await self._put(message)
        except Exception:
            logger.exception("the %s run failed", self.program)
        finally:
            with anyio.CancelScope(shield=True):
                if not self._exited.is_set():
                    _kill_group(self.process.pid, signal.SIGKILL)
                    await self.process.wait()
                    self._exited.set()
            on_finished()

    # -- internals ---------------------------------------------------------------

    async def _put(self, message: Message) -> None:
        # A caller that stopped listening closed the receiving end: drop, keep draining.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._send.send(message)

    async def _pump(self, stream: ByteReceiveStream, name: str) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        extras: dict[str, Any] = {"stream": "stderr"} if name == "stderr" else {}
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
            async for chunk in stream:
                text = decoder.decode(chunk)
                if text:
                    await self._put(replies.output(text, self.reply_to, **extras))
        text = decoder.decode(b"", final=True)
        if text:
            await self._put(replies.output(text, self.reply_to, **extras))

    async def _watchdog(self) -> None:
        with anyio.CancelScope(deadline=self.deadline):
            await first_of(self._stop, self._exited)
        if self._exited.is_set():
            return
        self.request_stop("timeout")
        with anyio.move_on_after(self.options.interrupt_grace):
            await self._exited.wait()
        if not self._exited.is_set():
            self.killed = True
            _kill_group(self.process.pid, signal.SIGKILL)

    def _closing(self, code: int) -> list[Message]:
        extras: dict[str, Any] = {"exit_code": code, "state_lost": False}
        out: list[Message] = []
        if self.stop_reason is not None:
            status = "timeout" if self.stop_reason == "timeout" else "interrupted"
            word = _STOP_WORDS[self.stop_reason]
            if self.stop_reason == "timeout":
                word += f" after {self.options.timeout:g} s"
            how = (
                f"it did not stop within {self.options.interrupt_grace:g} s of an interrupt, "
                f"so {self.program} was killed"
                if self.killed
                else f"{self.program} was stopped"
            )
            out.append(
                replies.notice(
                    f"Execution {word}; {how}. Nothing carries over between runs, "
                    "so no state was lost.",
                    status,
                    self.reply_to,
                    state_lost=False,
                )
            )
        elif code < 0:
            status = "error"
            out.append(
                replies.notice(describe_returncode(self.program, code) + ".", status, self.reply_to)
            )
        else:
            status = "ok" if code == 0 else "error"
        out.append(replies.active_line(None, self.reply_to, status=status, **extras))
        return out
