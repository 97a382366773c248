"""The core every supervised backend runs on.

- :class:`~.interpreter.Interpreter`: one process tree (start, signal, wait, kill);
- :class:`~.supervisor.Supervisor`: its lifecycle (start failure, death, restart, close);
- :class:`~.execution.Execution`: one run (deadline, stop ladder, final message);
- :class:`~.session.SupervisedSession` and :class:`~.session.SupervisedBackend`;
- :mod:`.items` (what a route carries, and :class:`~.items.Gone`) and :mod:`.procs`;
- :mod:`.stdin`: the code's reads answered by the caller's input callback.
"""

from __future__ import annotations

from .execution import Execution
from .interpreter import Deliver, Interpreter, InterpreterFactory
from .items import Finished, Gone, Line, Output
from .route import LateOutput, Route
from .session import SupervisedBackend, SupervisedSession
from .stdin import StdinChannel, feed_stdin
from .supervisor import Supervisor

__all__ = [
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
    "feed_stdin",
]
