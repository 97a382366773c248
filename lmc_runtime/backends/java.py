"""Java: each session is one JVM running ``kernels/lmc-java/LmcJava.java`` on the JShell API.

The runner speaks the same protocol as node's (:mod:`.core.runner.wire`), so the process
is the core's :class:`~.core.runner.RunnerInterpreter` and a run is a
:class:`~.core.runner.RunnerExecution`. What is Java's own: how it is started (the
runner ``lmc setup`` built: :mod:`lmc_runtime.java_runner`), what its end means,
and the runner's word that the code waits for a line of input.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from .. import replies
from ..java_runner import ARCHIVE, ARCHIVE_FLAGS, INSTALL, JAR, JAVA_FLAGS, MAIN, runner_build
from ..replies import Status
from .base import Availability
from .core import Gone, Output
from .core.runner import RunnerBackend, RunnerExecution, RunnerInterpreter
from .core.runner.wire import Reads
from .inputs import ask_input
from .kernelspecs import kernels_dir

__all__ = ["JavaBackend", "JavaExecution", "runner_source"]


def runner_source() -> Path:
    """The runner's source shipped in ``kernels/lmc-java``, which ``lmc setup`` builds."""
    return kernels_dir() / "lmc-java" / f"{MAIN}.java"


class JavaRunner(RunnerInterpreter):
    """The JVM: an exit code of its own is the code's ``System.exit``."""

    def gone(self, code: int | None, announced: int | None) -> Gone:
        if code is not None and code >= 0:
            return Gone.exited(f"called System.exit({code})", code)
        return super().gone(code, announced)


class JavaExecution(RunnerExecution):
    """A run on the JVM: a read the runner says waits is answered by the input callback."""

    async def handle(self, item: Any) -> AsyncIterator[Any]:
        callback, stdin = self.options.on_input, self.stdin
        if not isinstance(item, Reads) or callback is None or stdin is None or stdin.closed:
            return
        prompt = self.route.tail
        value, failure = await ask_input(self.options, prompt)
        if value is not None:
            line = value.splitlines()[0] if value else ""
            try:
                stdin.answer(line)
            except (OSError, ValueError) as exc:
                failure = f"the answer could not be written ({exc})"
            else:
                yield Output(line + "\n")
                return
        await self.request_stop("input")  # the stop closes stdin: the read ends
        text = f"input({prompt!r}) could not be answered: {failure}"
        yield replies.notice(text, Status.ERROR, self.reply_to)


class JavaBackend(RunnerBackend):
    """Sessions on the ``java`` found on PATH."""

    who = "java"
    execution = JavaExecution
    runner = JavaRunner

    def availability(self) -> Availability:
        if shutil.which("java") is None:
            return Availability.no(f"Java is not installed (no `java` on PATH): {INSTALL}")
        if not (runner_build(runner_source()) / JAR).is_file():
            return Availability.no("the Java runner is not built: run `lmc setup`")
        return Availability.yes()

    def runner_argv(self) -> list[str]:
        """The JVM on the built runner, mapping its class-data archive if one was recorded."""
        java, build = shutil.which("java") or "java", runner_build(runner_source())
        archive = build / ARCHIVE
        shared = [f"-XX:SharedArchiveFile={archive}", *ARCHIVE_FLAGS] if archive.is_file() else []
        return [java, *JAVA_FLAGS, *shared, "-cp", os.fspath(build / JAR), MAIN]
