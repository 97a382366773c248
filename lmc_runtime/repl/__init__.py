"""``lmc repl``: an interactive terminal REPL where people type code and watch it run.

Importing this package stays cheap; the terminal machinery (prompt_toolkit,
rich) loads when the REPL starts.
"""

from __future__ import annotations

from .options import ReplOptions, add_arguments

__all__ = ["ReplOptions", "add_arguments", "run_repl"]


def run_repl(options: ReplOptions) -> int:
    """Run the REPL until Ctrl-D or ``%exit``; return the exit status."""
    from .launch import run_repl as _run_repl

    return _run_repl(options)
