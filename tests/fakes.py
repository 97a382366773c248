"""A scripted fake backend for the fast test tier.

Its "code" is one command a line: ``print TEXT``, ``line N``, ``image B64``,
``flood N`` (N bytes of output), ``wait`` (until interrupted), ``crash MSG``
(an internal bug), ``input PROMPT``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
from anyio.abc import TaskGroup

from lmc_runtime import replies
from lmc_runtime.backends import Availability, ExecutionOptions, SessionSettings
from lmc_runtime.errors import KernelStartError
from lmc_runtime.messages import Message


class ScriptedSession:
    def __init__(self, language: str) -> None:
        self.language = language
        self.executed: list[tuple[str, ExecutionOptions]] = []
        self.interrupts = 0
        self.restarts = 0
        self.closed = False
        self._interrupted = anyio.Event()

    async def execute(self, code: str, options: ExecutionOptions) -> AsyncIterator[Message]:
        self.executed.append((code, options))
        self._interrupted = anyio.Event()
        status = "ok"
        for step in code.splitlines():
            verb, _, arg = step.partition(" ")
            if verb == "print":
                yield replies.output(arg + "\n", options.reply_to)
            elif verb == "line":
                yield replies.active_line(int(arg), options.reply_to)
            elif verb == "image":
                yield replies.image(arg, "image/png", options.reply_to)
            elif verb == "flood":
                for _ in range(int(arg) // 1000):
                    yield replies.output("x" * 999 + "\n", options.reply_to)
            elif verb == "wait":
                with anyio.move_on_after(10):
                    await self._interrupted.wait()
                yield replies.notice("interrupted", "interrupted", options.reply_to)
                status = "interrupted"
            elif verb == "input":
                assert options.on_input is not None
                answer = options.on_input(arg)
                yield replies.output(f"{arg}{answer}\n", options.reply_to)
            elif verb == "crash":
                raise RuntimeError(arg)
        yield replies.active_line(None, options.reply_to, status=status)

    async def interrupt(self) -> None:
        self.interrupts += 1
        self._interrupted.set()

    async def restart(self) -> None:
        self.restarts += 1

    async def aclose(self) -> None:
        self.closed = True


class ScriptedBackend:
    name = "fake"
    aliases = ("scripted",)

    def __init__(self, *, available: bool = True, start_error: str | None = None) -> None:
        self._available = available
        self._start_error = start_error
        self.sessions: list[ScriptedSession] = []
        self.settings: list[SessionSettings] = []

    def availability(self) -> Availability:
        return Availability.yes() if self._available else Availability.no("fake is switched off")

    async def start(self, task_group: TaskGroup, settings: SessionSettings) -> ScriptedSession:
        if self._start_error is not None:
            raise KernelStartError(self._start_error)
        self.settings.append(settings)
        session = ScriptedSession(self.name)
        self.sessions.append(session)
        return session
