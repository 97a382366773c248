"""``lmc languages``."""

from __future__ import annotations

import argparse
import sys

from ..computer import Computer
from ..options.interpreters import chosen_interpreters

__all__ = ["cmd_languages"]


def cmd_languages(args: argparse.Namespace) -> int:
    computer = Computer(**chosen_interpreters(args))
    for status in computer.languages.values():
        state = "available" if status.available else f"unavailable: {status.reason}"
        aliases = f" (also {', '.join(status.aliases)})" if status.aliases else ""
        sys.stdout.write(f"{status.name}{aliases}: {state}\n")
    return 0
