"""The core every supervised backend runs on: an :class:`Interpreter` (one process
tree) under a :class:`Supervisor` (its lifecycle), runs as :class:`Execution`."""

from __future__ import annotations

from .execution import Execution
from .interpreter import Deliver, Interpreter, InterpreterFactory
from .items import Begun, Finished, Gone, Line, Output
from .route import LateOutput, Route
from .session import SupervisedBackend, SupervisedSession
from .stdin import StdinChannel, answers_fifo_reads, feed_stdin
from .supervisor import Supervisor

__all__ = [
    "Begun",
    "Deliver",
    "Execution",
    "Finished",
    "Gone",
    "Interpreter",
    "InterpreterFactory",
    "LateOutput",
    "Line",
    "Output",
    "Route",
    "StdinChannel",
    "SupervisedBackend",
    "SupervisedSession",
    "Supervisor",
    "answers_fifo_reads",
    "feed_stdin",
]
