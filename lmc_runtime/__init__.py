"""lmc-runtime: the computer for LLM agents.

Hand it an assistant ``code`` message in the LMC format; it runs the code on a
real backend for that language and streams computer-role messages back.
"""

from __future__ import annotations

from .computer import Computer, LanguageStatus
from .config import Limits, Timeouts
from .errors import (
    BackendError,
    BackendUnavailable,
    KernelDied,
    KernelStartError,
    LMCError,
    MessageError,
    UsageError,
)
from .messages import Message, parse_message

__all__ = [
    "BackendError",
    "BackendUnavailable",
    "Computer",
    "KernelDied",
    "KernelStartError",
    "LMCError",
    "LanguageStatus",
    "Limits",
    "Message",
    "MessageError",
    "Timeouts",
    "UsageError",
    "parse_message",
]

__version__ = "0.1.0"
