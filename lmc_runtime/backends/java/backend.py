"""Java through ``jshell``: state across runs, the running line, errors with their line.

See :mod:`.interpreter` for the process and how a cell is typed into it;
everything else (turns, deadlines, the stop ladder, restarts) is the core's.
Only answering the code's input is this backend's own run logic.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio

from ... import replies
from ...replies import Status
from ..base import Availability, SessionSettings
from ..core import Execution, Output, SupervisedBackend
from ..inputs import call_input
from .interpreter import InputWanted, JshellInterpreter

__all__ = ["JSHELL_FLAGS", "JavaBackend", "JshellExecution"]

#: Code runs in jshell's own JVM (one JVM starts, Ctrl-C stops a snippet, System.exit
#: ends jshell); C1 alone halves the start on small machines; UTF-8 whatever the locale.
JSHELL_FLAGS = (
    "--execution",
    "local",
    "-J-XX:TieredStopAtLevel=1",
    "-J-Dfile.encoding=UTF-8",
    "-J-Dsun.stdout.encoding=UTF-8",
    "-J-Dsun.stderr.encoding=UTF-8",
    "--feedback",
    "lmc",
)


class JshellExecution(Execution):
    """A run on jshell: a read of ``System.in`` is answered by the input callback."""

    async def handle(self, item: Any) -> AsyncIterator[Any]:
        if not isinstance(item, InputWanted):
            return
        callback = self.options.on_input
        assert callback is not None
        failure = value = ""
        try:
            with anyio.fail_after(self.options.input_timeout):
                value = await call_input(callback, item.prompt)
        except TimeoutError:
            failure = "no answer in time"
        except Exception as exc:  # the caller's callback: any failure stops the run
            failure = repr(exc)
        interpreter = self.supervisor.current
        if not failure and isinstance(interpreter, JshellInterpreter):
            try:
                value = interpreter.answer(self.route.key, value)
            except (OSError, ValueError) as exc:
                failure = f"the answer could not be written ({exc})"
        if failure:  # the stop fails the read, and the run ends interrupted
            await self.request_stop("input")
            text = f"input({item.prompt!r}) could not be answered: {failure}"
            yield replies.notice(text, Status.ERROR, self.reply_to)
            return
        yield Output(value + "\n")


class JavaBackend(SupervisedBackend):
    """Sessions on the ``jshell`` found on PATH."""

    who = "jshell"
    execution = JshellExecution

    def jshell(self) -> str | None:
        """The jshell executable, or None."""
        return shutil.which("jshell")

    def availability(self) -> Availability:
        if self.jshell() is None:
            return Availability.no(
                "jshell is not installed (no `jshell` on PATH): "
                "apt-get install default-jdk-headless, or run `lmc setup`"
            )
        return Availability.yes()

    def environment(self, settings: SessionSettings) -> dict[str, str]:
        return {**super().environment(settings), "TERM": "dumb"}

    def interpreter(self, settings: SessionSettings, env: Mapping[str, str]) -> JshellInterpreter:
        prefs = settings.interpreter_dir / "jshell-prefs"
        init = settings.work_dir / "jshell-init.jsh"
        jshell = self.jshell() or "jshell"
        argv = [jshell, *JSHELL_FLAGS, f"-J-Djava.util.prefs.userRoot={prefs}", str(init)]
        return JshellInterpreter(
            settings.command(argv),
            init=init,
            cwd=settings.cwd,
            env=env,
            startup_timeout=settings.timeouts.startup,
        )
