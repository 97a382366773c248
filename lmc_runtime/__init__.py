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
    InvalidThreadId,
    KernelDied,
    KernelStartError,
    LMCError,
    MessageError,
    SandboxError,
    SandboxUnavailable,
    StoreError,
    ThreadExists,
    ThreadNotFound,
    UnsafePath,
    UsageError,
)
from .messages import Message, parse_message

__all__ = [
    "BackendError",
    "BackendUnavailable",
    "Computer",
    "InvalidThreadId",
    "KernelDied",
    "KernelStartError",
    "LMCError",
    "LanguageStatus",
    "Limits",
    "Message",
    "MessageError",
    "SandboxError",
    "SandboxUnavailable",
    "StoreError",
    "ThreadExists",
    "ThreadNotFound",
    "Timeouts",
    "UnsafePath",
    "UsageError",
    "parse_message",
]

__version__ = "0.1.0"
