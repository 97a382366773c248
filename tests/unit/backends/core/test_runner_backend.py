"""RunnerBackend: the one builder of node's and Java's runner, on a tiny runner of our own."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from lmc_runtime.backends import ExecutionOptions, SessionSettings
from lmc_runtime.backends.core.runner import RunnerBackend, RunnerExecution, RunnerInterpreter
from lmc_runtime.config import Timeouts

pytestmark = pytest.mark.anyio

#: Bounds every wait: only a wedge comes near it.
LIMIT = 10.0

#: Says it is ready, then answers each request with one line naming where and how it runs.
_RUNNER = r"""
import json, os, sys
events = open(sys.argv[-2], "w", buffering=1)
events.write(json.dumps({"k": "r", "pid": os.getpid()}) + "\n")
for line in open(sys.argv[-1]):
    request = json.loads(line)
    if "id" in request:
        said = f"{request['code']} in {os.getcwd()} via {os.environ.get('WRAPPED')}\n"
        events.write(json.dumps({"k": "o", "d": said}) + "\n")
        events.write(json.dumps({"k": "d", "id": request["id"], "s": "ok", "p": False}) + "\n")
"""


class Wrapping:
    """A launcher that marks what it starts."""

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return ["env", "WRAPPED=the launcher", *argv]


class TinyRunner(RunnerInterpreter):
    pass


class TinyBackend(RunnerBackend):
    who = "tiny"
    runner = TinyRunner

    def runner_argv(self) -> list[str]:
        return [sys.executable, "-c", _RUNNER]


async def test_a_runner_backend_starts_its_runner_as_the_session_says(tmp_path: Path) -> None:
    """Guards the builder node and Java share: the runner class and name the backend
    gives, run through the session's launcher, in its cwd, with its timeouts."""
    settings = SessionSettings(
        cwd=tmp_path,
        work_dir=tmp_path / "work",
        timeouts=Timeouts(startup=LIMIT),
        launcher=Wrapping(),
    )
    backend = TinyBackend()
    runner = backend.interpreter(settings, {"PATH": "/usr/bin:/bin"})
    assert isinstance(runner, TinyRunner) and runner.who == "tiny"
    assert runner.stdin_path == tmp_path / "work" / "stdin"
    assert backend.execution is RunnerExecution
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            session = await backend.start(tg, settings)
            try:
                run = session.execute("hello", ExecutionOptions("c1"))
                said = "".join([str(m.content) async for m in run if m.format == "output"])
            finally:
                await session.aclose()
    assert said == f"hello in {tmp_path} via the launcher\n"
