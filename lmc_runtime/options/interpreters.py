"""``--python``, ``--node`` and ``--r``: run code in the user's own interpreters."""

from __future__ import annotations

import argparse
from typing import TypedDict

__all__ = ["Interpreters", "add_interpreter_options", "chosen_interpreters"]


class Interpreters(TypedDict):
    """The ``python``, ``node`` and ``r`` keyword arguments of ``Computer``."""

    python: str | None
    node: str | None
    r: str | None


def add_interpreter_options(parser: argparse.ArgumentParser) -> None:
    """Add the options that choose the interpreters to ``parser``."""
    group = parser.add_argument_group("interpreters (default: the ones lmc-runtime runs with)")
    group.add_argument(
        "--python",
        metavar="PYTHON",
        help="a Python (e.g. .venv/bin/python, with ipykernel) or a kernelspec name",
    )
    group.add_argument("--node", metavar="NODE", help="the node executable for JavaScript/TS")
    group.add_argument("--r", metavar="R", help="the R executable (with IRkernel)")


def chosen_interpreters(args: argparse.Namespace) -> Interpreters:
    """``Computer`` keyword arguments for the interpreters ``args`` chose."""
    return Interpreters(
        python=getattr(args, "python", None),
        node=getattr(args, "node", None),
        r=getattr(args, "r", None),
    )
