"""lmc-runtime: the computer for LLM agents.

Hand it an assistant ``code`` message in the LMC format; it runs the code on a
real backend for that language and streams computer-role messages back.

The exceptions a caller catches (misuse, malformed messages, backends that
fail, a remote ``lmc serve`` that refuses) are importable from here; every
exception, including the service's own, from :mod:`lmc_runtime.errors`.
"""

from __future__ import annotations

#: The version of the package (the one place it is written; the build reads it here).
__version__ = "0.1.0"

from . import errors as errors
from .computer import Computer, LanguageStatus
from .computer_like import ComputerLike
from .config import Limits, Timeouts
from .errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BackendError,
    BackendUnavailable,
    ConnectionLost,
    KernelDied,
    KernelStartError,
    LMCError,
    MessageError,
    MissingExtra,
    RemoteBusy,
    RemoteCapacityExceeded,
    RemoteError,
    RemotePathError,
    RemoteSessionNotFound,
    RemoteUnauthorized,
    RemoteUnavailable,
    UsageError,
)
from .messages import Message, parse_message

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "BackendError",
    "BackendUnavailable",
    "Computer",
    "ComputerLike",
    "ConnectionLost",
    "KernelDied",
    "KernelStartError",
    "LMCError",
    "LanguageStatus",
    "Limits",
    "Message",
    "MessageError",
    "MissingExtra",
    "RemoteBusy",
    "RemoteCapacityExceeded",
    "RemoteError",
    "RemotePathError",
    "RemoteSessionNotFound",
    "RemoteUnauthorized",
    "RemoteUnavailable",
    "Timeouts",
    "UsageError",
    "parse_message",
]
