"""The commands of one E2B sandbox: started, found by pid or tag, listed, ended.

Each sandbox has its own table (in its ``layers``), so a pid or a tag names a
command of the sandbox the request came for and of no other. Pids are the
table's own numbers, never reused while the sandbox lives: every command runs
in a sandbox of processes of its own, whose PID namespace numbers them anew,
so the pid a command sees of itself (``$$``) is not a name the table could keep
unique. ``list``, ``connect``, ``kill`` and the rest all use the table's.

When the sandbox ends (killed, timed out, its session gone, the server
stopping), its table kills every command and waits until they are reaped.
However the server itself ends, none outlives it: with bubblewrap each command's
supervisor kills its sandbox when the server's process ends (``_exec.py
--supervise``); without, a :class:`~lmc_runtime.lifeline.Lifeline` does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import anyio
from anyio.abc import TaskGroup, TaskStatus

from ...lifeline import Lifeline
from ...sandbox.launch import SandboxLauncher
from ...sandbox.sandbox import Sandbox
from ..registry import E2BSandbox, Sandboxes
from .process_command import Command
from .process_launch import (
    Launch,
    LaunchRefused,
    command_line,
    commands_launcher,
    session_env,
    spawn,
)

__all__ = ["ProcessTable", "table_of"]

logger = logging.getLogger(__name__)

#: The layer's key in :attr:`E2BSandbox.layers`.
LAYER = "envd.process"
#: The first pid the table gives (above those of a system's own daemons, as E2B's are).
FIRST_PID = 1000
#: How many commands one sandbox may run at once.
MAX_RUNNING = 64
#: How long the table's close waits for its commands to be reaped.
_CLOSE_WAIT = 15.0


class ProcessTable:
    """The running commands of one sandbox."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._commands: dict[int, Command] = {}
        self._next_pid = FIRST_PID
        self._tg: TaskGroup | None = None
        self._closed = False
        self._stopped = anyio.Event()
        self._ready = anyio.Event()
        #: Holds the commands when no bubblewrap supervisor does (see the module).
        self._lifeline: Lifeline | None = None
        #: The session's launcher with the commands' shared ``/tmp`` (made on first use).
        self._launcher: SandboxLauncher | None = None

    def __iter__(self) -> Iterator[Command]:
        return iter(list(self._commands.values()))

    def __len__(self) -> int:
        return len(self._commands)

    def find(self, pid: int | None = None, tag: str | None = None) -> Command | None:
        """The running command ``pid`` (or tagged ``tag``), or None."""
        if pid is not None:
            return self._commands.get(pid)
        for command in self:
            if tag is not None and command.tag == tag:
                return command
        return None

    async def run(self) -> None:
        """Hold the commands' tasks until :meth:`aclose`."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self._ready.set()
                await self._stopped.wait()
                tg.cancel_scope.cancel()
        finally:
            self._tg = None
            self._closed = True
            if self._lifeline is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self._lifeline.aclose()

    async def start(self, launch: Launch, tag: str | None = None) -> Command:
        """Start ``launch`` in the sandbox; :class:`LaunchRefused` if it cannot be,
        OSError if starting it failed."""
        launch = launch.checked()
        await self._ready.wait()
        if self._closed or self._tg is None:
            raise LaunchRefused("the sandbox is ending")
        if len(self._commands) >= MAX_RUNNING:
            raise LaunchRefused(f"at most {MAX_RUNNING} commands run at once in a sandbox")
        if self._launcher is None:
            self._launcher = await anyio.to_thread.run_sync(commands_launcher, self.sandbox)
        argv = command_line(self.sandbox, self._launcher, launch)
        env = session_env(self.sandbox, launch)
        if not self._launcher.supervises and self._lifeline is None:
            self._lifeline = Lifeline()
        spawned = await anyio.to_thread.run_sync(spawn, argv, env, launch)
        pid, self._next_pid = self._next_pid, self._next_pid + 1
        command = Command(pid, tag, launch, spawned, self._lifeline)
        self._commands[pid] = command
        if self._tg is None:  # closed while it started
            command.kill()
        else:
            self._tg.start_soon(command.run, self._forget)
            return command
        # Closed meanwhile: the table's task group is gone; end it here.
        await command.run(self._forget)
        raise LaunchRefused("the sandbox is ending")

    def _forget(self, command: Command) -> None:
        if self._commands.get(command.pid) is command:
            del self._commands[command.pid]

    async def aclose(self) -> None:
        """Kill every command and wait (a bounded time) until each is reaped."""
        self._closed = True
        commands = list(self)
        for command in commands:
            command.kill(cut=True)
        with anyio.move_on_after(_CLOSE_WAIT):
            for command in commands:
                await command.done.wait()
        self._stopped.set()


async def _hold(table: ProcessTable, *, task_status: TaskStatus[None]) -> None:
    task_status.started()
    try:
        await table.run()
    except Exception:
        logger.warning("the commands' table of a sandbox failed", exc_info=True)


async def table_of(sandbox: E2BSandbox, sandboxes: Sandboxes) -> ProcessTable:
    """``sandbox``'s table, made on first use and run while ``sandboxes`` run (not
    the request's while); it is closed when the sandbox ends."""
    table = sandbox.layers.get(LAYER)
    if isinstance(table, ProcessTable):
        return table
    table = ProcessTable(sandbox.session.sandbox)
    sandbox.layers[LAYER] = table
    sandbox.closers.append(table.aclose)
    await sandboxes.start_task(_hold, table)
    return table
