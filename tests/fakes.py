"""Scripted fakes for the fast test tier.

:class:`ScriptedBackend` is a whole fake backend, for the executor's tests. Its
"code" is one command a line: ``print TEXT``, ``line N``, ``image B64``,
``flood N`` (N bytes of output), ``wait`` (until interrupted), ``crash MSG``
(an internal bug), ``input PROMPT``.

:class:`FakeBackend` runs on the core (``lmc_runtime.backends.core``): only its
interpreter is fake (:class:`FakeInterpreter`, which plays a script), so the
supervisor, the turns and the executions under test are the real ones.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
from anyio.abc import TaskGroup

from lmc_runtime import replies
from lmc_runtime.backends import Availability, ExecutionOptions, SessionSettings
from lmc_runtime.backends.core import (
    Deliver,
    Execution,
    Finished,
    Gone,
    Line,
    Output,
    Route,
    SupervisedBackend,
)
from lmc_runtime.errors import KernelStartError
from lmc_runtime.messages import Message
from lmc_runtime.procs import describe_exit
from lmc_runtime.replies import Status


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


# -- a fake interpreter on the core ------------------------------------------------


#: Steps a submit delivers itself: fewer than a route holds, so it never waits for the caller.
_INLINE = 256


class FakeInterpreter:
    """An :class:`~lmc_runtime.backends.core.Interpreter` that plays a script, with no process.

    Each submitted code is one command a line:

    - ``print TEXT`` / ``err TEXT``: a line of stdout / stderr output;
    - ``write TEXT``: stdout output with no newline;
    - ``native TEXT``: a line of stdout that names no run (as a process's own
      stdout does, when the interpreter cannot tell which run wrote it);
    - ``flood N``: N bytes of stdout in 1000-byte pieces;
    - ``line N``: the code is now at line N;
    - ``say TEXT``: a ready-made output message (a backend's own item);
    - ``finish STATUS [KEY=VALUE ...]``: the run is done (ended ``ok`` by default);
    - ``hang``: runs until SIGINT or SIGTERM; ``stubborn``: ignores SIGINT, ends on
      SIGTERM; ``wedge``: only a kill ends it;
    - ``gate NAME``: waits until the test calls :meth:`open` with NAME;
    - ``die CODE``: the interpreter dies, as a process with a Popen return code CODE;
    - ``exit CODE``: the code ends the interpreter itself.

    Steps before the first one that waits (at most ``_INLINE`` of them) are
    delivered while the code is submitted, before the caller reads anything;
    the rest in the background, as a reader would.
    A script that neither finishes, dies nor exits gets a ``finish ok`` at the end.
    """

    def __init__(self, backend: FakeBackend) -> None:
        self.backend = backend
        self.number = len(backend.interpreters) + 1
        self.codes: list[str] = []
        self.signals: list[int] = []
        #: Set by the first signal.
        self.signalled = anyio.Event()
        self.kills = 0
        self.launched = False
        self.ended = anyio.Event()
        self._gone: Gone | None = None
        self._deliver: Deliver | None = None
        self._task_group: TaskGroup | None = None
        self._wakeups: dict[str, anyio.Event] = {}
        self._gates: dict[str, anyio.Event] = {}
        self._players: set[anyio.CancelScope] = set()

    # -- the Interpreter protocol ------------------------------------------------

    async def launch(self, task_group: TaskGroup, deliver: Deliver) -> None:
        try:
            await self.backend.launch_gate.wait()
            if self.backend.start_failures:
                failure = self.backend.start_failures.pop(0)
                raise (
                    failure if isinstance(failure, KernelStartError) else KernelStartError(failure)
                )
            self._task_group = task_group
            self._deliver = deliver
            self.launched = True
        finally:
            self.backend.attempted()

    async def submit(self, code: str, options: ExecutionOptions, route: Route) -> None:
        self.codes.append(code)
        if self.ended.is_set():
            return  # written to a process that is gone: nobody reads it
        self._wakeups = {}  # an interrupt of an idle interpreter is lost
        steps = code.splitlines()
        if not any(s.split(" ", 1)[0] in ("finish", "die", "exit") for s in steps):
            steps.append("finish ok")
        inline = 0
        while steps and not self._waits(steps[0]) and inline < _INLINE:
            await self._step(steps.pop(0), route.key)
            inline += 1
        if steps and not self.ended.is_set():
            assert self._task_group is not None
            self._task_group.start_soon(self._play, steps, route.key)

    async def send_signal(self, signum: int) -> None:
        self.signals.append(signum)
        self.signalled.set()
        if signum == signal.SIGKILL:
            self.die(-signal.SIGKILL)
            return
        for name in ("hang", "stubborn") if signum == signal.SIGTERM else ("hang",):
            self._wakeup(name).set()

    async def wait(self) -> Gone:
        await self.ended.wait()
        assert self._gone is not None
        return self._gone

    async def kill(self) -> None:
        self.kills += 1
        await self.backend.kill_gate.wait()
        self._stop_players()
        self._end(Gone("fake was killed", -signal.SIGKILL))

    # -- what a test does to it ----------------------------------------------------

    def die(self, code: int) -> None:
        """The process ends now (while a run is open, or while idle)."""
        self._stop_players()
        self._end(Gone(describe_exit(code, "fake"), exit_code=code))

    def open(self, gate: str) -> None:
        self._gates.setdefault(gate, anyio.Event()).set()

    async def emit(self, item: Any, key: object = None) -> None:
        """What a reader of this interpreter would hand on (late output, a stale run's)."""
        assert self._deliver is not None
        await self._deliver(item, key)

    # -- the script ------------------------------------------------------------------

    @staticmethod
    def _waits(step: str) -> bool:
        return step.split(" ", 1)[0] in ("hang", "stubborn", "wedge", "gate")

    def _wakeup(self, name: str) -> anyio.Event:
        return self._wakeups.setdefault(name, anyio.Event())

    def _stop_players(self) -> None:
        for scope in self._players:
            scope.cancel()

    def _end(self, gone: Gone) -> None:
        if self._gone is None:
            self._gone = gone
        self.ended.set()

    async def _play(self, steps: list[str], key: object) -> None:
        with anyio.CancelScope() as scope:
            self._players.add(scope)
            try:
                for step in steps:
                    if self.ended.is_set():
                        return
                    await self._step(step, key)
            finally:
                self._players.discard(scope)

    async def _step(self, step: str, key: object) -> None:
        verb, _, arg = step.partition(" ")
        if verb in ("hang", "stubborn", "wedge"):
            await self._wakeup(verb).wait()
            self._wakeups.pop(verb, None)
        elif verb == "gate":
            await self._gates.setdefault(arg, anyio.Event()).wait()
        elif verb == "die":
            self.die(int(arg))
        elif verb == "exit":
            self._stop_players()
            self._end(Gone.exited(f"called exit({arg})", int(arg)))
        elif verb == "native":
            await self.emit(Output(arg + "\n"))
        else:
            await self.emit(self._item(verb, arg), key)

    def _item(self, verb: str, arg: str) -> Any:
        if verb == "print":
            return Output(arg + "\n")
        if verb == "err":
            return Output(arg + "\n", "stderr")
        if verb == "write":
            return Output(arg)
        if verb == "flood":
            return Output("x" * int(arg))
        if verb == "line":
            return Line(int(arg))
        if verb == "say":
            return replies.output(arg + "\n", "said")
        if verb == "finish":
            status, *pairs = arg.split()
            extras = dict(pair.split("=", 1) for pair in pairs)
            return Finished(Status(status), extras)
        raise ValueError(f"unknown step {verb!r}")


class FakeExecution(Execution):
    """A run on the fake: its harder rung (SIGTERM) is tried if the backend allows it."""

    async def escalate(self) -> bool:
        current = self.supervisor.current
        if not isinstance(current, FakeInterpreter):
            return False
        current.backend.escalations += 1
        if not current.backend.escalates:
            return False
        await current.send_signal(signal.SIGTERM)
        return True


class FakeBackend(SupervisedBackend):
    """A backend on the core whose interpreters are :class:`FakeInterpreter`.

    ``start_failures`` are the errors of the next launches, one each, in order
    (a text stands for a :class:`KernelStartError`);
    ``escalates`` says whether a stop that an interrupt did not end tries SIGTERM
    before a restart (``escalations`` counts how often that was asked).
    """

    who = "the fake"
    execution = FakeExecution

    def __init__(
        self,
        *,
        start_failures: list[str | KernelStartError] | None = None,
        escalates: bool = False,
    ) -> None:
        self.start_failures: list[str | KernelStartError] = list(start_failures or [])
        self.escalates = escalates
        self.escalations = 0
        self.interpreters: list[FakeInterpreter] = []
        #: Every launch (kill) waits for it: a test replaces it to hold launches (kills).
        self.launch_gate = anyio.Event()
        self.launch_gate.set()
        self.kill_gate = anyio.Event()
        self.kill_gate.set()
        #: Launches tried so far, whether they worked or not.
        self.attempts = 0
        self._attempt = anyio.Event()

    def attempted(self) -> None:
        self.attempts += 1
        self._attempt.set()
        self._attempt = anyio.Event()

    async def until_attempts(self, count: int) -> None:
        """Wait until ``count`` launches have been tried."""
        while self.attempts < count:
            await self._attempt.wait()

    @property
    def current(self) -> FakeInterpreter:
        """The interpreter launched last."""
        return self.interpreters[-1]

    def availability(self) -> Availability:
        return Availability.yes()

    def interpreter(self, settings: SessionSettings, env: Mapping[str, str]) -> FakeInterpreter:
        interpreter = FakeInterpreter(self)
        self.interpreters.append(interpreter)
        return interpreter
