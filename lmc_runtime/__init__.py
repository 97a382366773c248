"""lmc-runtime: the computer for LLM agents.

Hand it an assistant ``code`` message in the LMC format; it runs the code on a
real backend for that language and streams computer-role messages back.

Every exception of :mod:`lmc_runtime.errors` is importable from here too.
"""

from __future__ import annotations

#: The version of the package (the one place it is written; the build reads it here).
__version__ = "0.1.0"

from . import errors
from .computer import Computer, LanguageStatus
from .computer_like import ComputerLike
from .config import Limits, Timeouts
from .errors import *  # noqa: F403  (the exception tree, as errors.__all__ lists it)
from .messages import Message, parse_message

__all__ = [
    "Computer",
    "ComputerLike",
    "LanguageStatus",
    "Limits",
    "Message",
    "Timeouts",
    "parse_message",
]
__all__ += errors.__all__
