"""The runner protocol, which node's ``runner.js`` and the JVM's ``LmcJava`` speak: its
lines (:mod:`.wire`), the runner process as an interpreter (:mod:`.process`), and a
run on it, stopped by name (:mod:`.runs`), and a backend of sessions on it
(:mod:`.backend`)."""

from __future__ import annotations

from .backend import RunnerBackend
from .process import RunnerInterpreter
from .runs import REINTERRUPT, RunnerExecution

__all__ = ["REINTERRUPT", "RunnerBackend", "RunnerExecution", "RunnerInterpreter"]
