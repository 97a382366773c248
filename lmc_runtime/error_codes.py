"""The codes of ``lmc serve``'s error bodies (``{"error": {"code", "message"}}``).

Written once, here: the server answers with them and the remote client reads
them. A member is its wire string, so comparing with ``"busy"`` still holds.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ErrorCode"]


class ErrorCode(StrEnum):
    """An error body's ``code``; its value is what goes on the wire."""

    # Requests and their transport.
    BAD_REQUEST = "bad_request"
    MALFORMED = "malformed"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    REQUEST_TIMEOUT = "request_timeout"
    TOO_LARGE = "too_large"
    CLIENT_DISCONNECTED = "client_disconnected"
    TOO_MANY_CONNECTIONS = "too_many_connections"
    # Access.
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NETWORK_NOT_ALLOWED = "network_not_allowed"
    # Sessions.
    NOT_FOUND = "not_found"
    SESSION_ENDED = "session_ended"
    SESSION_LOST = "session_lost"
    SESSION_FAILED = "session_failed"
    BUSY = "busy"
    CONFLICT = "conflict"
    TOO_MANY_SESSIONS = "too_many_sessions"
    LIMIT_TOO_HIGH = "limit_too_high"
    # Checkpoints.
    CHECKPOINT_NOT_FOUND = "checkpoint_not_found"
    CHECKPOINT_GONE = "checkpoint_gone"
    TOO_MANY_CHECKPOINTS = "too_many_checkpoints"
    CHECKPOINT_MEMORY = "checkpoint_memory"
    CHECKPOINTS_UNSUPPORTED = "checkpoints_unsupported"
    # Languages and interpreters.
    UNKNOWN_LANGUAGE = "unknown_language"
    LANGUAGE_UNAVAILABLE = "language_unavailable"
    UNKNOWN_ENVIRONMENT = "unknown_environment"
    ENVIRONMENT_BROKEN = "environment_broken"
    KERNEL_START_FAILED = "kernel_start_failed"
    KERNEL_DIED = "kernel_died"
    BACKEND_ERROR = "backend_error"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    SANDBOX_ERROR = "sandbox_error"
    # Files.
    BAD_PATH = "bad_path"
    UNSAFE_PATH = "unsafe_path"
    FILE_NOT_FOUND = "file_not_found"
    FILE_EXISTS = "file_exists"
    NOT_A_REGULAR_FILE = "not_a_regular_file"
    IS_A_DIRECTORY = "is_a_directory"
    NOT_A_DIRECTORY = "not_a_directory"
    DIRECTORY_NOT_EMPTY = "directory_not_empty"
    # The service itself.
    UNAVAILABLE = "unavailable"
    SHUTTING_DOWN = "shutting_down"
    STORE_UNAVAILABLE = "store_unavailable"
    IO_ERROR = "io_error"
    INTERNAL = "internal"
    # Made up when an answer carries no code (an unknown status, a body that is
    # not an error body) or is not HTTP as the client expects.
    ERROR = "error"
    PROTOCOL = "protocol"
