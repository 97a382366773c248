"""Java through ``jshell``: the backend, and the run that answers the code's input.

Everything else (turns, deadlines, the stop ladder, restarts) is the core's.
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
from .interpreter import JshellInterpreter
from .stream import Event

__all__ = ["JSHELL_FLAGS", "JavaBackend", "JshellExecution"]

#: Code runs in jshell's own JVM (one JVM starts, Ctrl-C stops a snippet, System.exit
#: ends jshell), which lets the code's environment be set; C1 alone halves the start
#: on small machines; UTF-8 whatever the locale.
JSHELL_FLAGS = (
    *("--execution", "local", "-J--add-opens=java.base/java.util=ALL-UNNAMED"),
    *("-J-XX:TieredStopAtLevel=1", "-J-Dfile.encoding=UTF-8"),
    *("-J-Dsun.stdout.encoding=UTF-8", "-J-Dsun.stderr.encoding=UTF-8", "--feedback", "lmc"),
)


class JshellExecution(Execution):
    """A run on jshell: a read of ``System.in`` is answered by the input callback."""

    async def handle(self, item: Any) -> AsyncIterator[Any]:
        callback = self.options.on_input
        if not isinstance(item, Event) or callback is None:
            return
        prompt = self.route.tail
        try:
            with anyio.fail_after(self.options.input_timeout):
                value = await call_input(callback, prompt)
            line = value.splitlines()[0] if value else ""
        except Exception as exc:  # the caller's callback: any failure stops the run
            failure = "no answer in time" if isinstance(exc, TimeoutError) else repr(exc)
        else:
            interpreter = self.supervisor.current
            try:
                if isinstance(interpreter, JshellInterpreter):
                    interpreter.answer(self.route.key, line)
            except (OSError, ValueError) as exc:
                failure = f"the answer could not be written ({exc})"
            else:
                yield Output(line + "\n")
                return
        await self.request_stop("input")  # fails the read; the run ends interrupted
        text = f"input({prompt!r}) could not be answered: {failure}"
        yield replies.notice(text, Status.ERROR, self.reply_to)


class JavaBackend(SupervisedBackend):
    """Sessions on the ``jshell`` found on PATH."""

    who = "jshell"
    execution = JshellExecution

    def availability(self) -> Availability:
        if shutil.which("jshell") is None:
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
        jshell = shutil.which("jshell") or "jshell"
        argv = [jshell, *JSHELL_FLAGS, f"-J-Djava.util.prefs.userRoot={prefs}", str(init)]
        return JshellInterpreter(
            settings.command(argv),
            init=init,
            cwd=settings.cwd,
            env=env,
            startup=settings.timeouts.startup,
        )
