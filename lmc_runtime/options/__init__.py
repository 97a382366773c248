"""The command-line options that ``lmc``'s commands share (``run``, ``demo``,
``repl``, ``mcp``): the interpreters to run in, and a remote ``lmc serve`` to run
on. It imports none of the commands, which all import it."""

from __future__ import annotations

from .interpreters import Interpreters, add_interpreter_options, chosen_interpreters
from .remote import add_remote_options, remote_computer

__all__ = [
    "Interpreters",
    "add_interpreter_options",
    "add_remote_options",
    "chosen_interpreters",
    "remote_computer",
]
