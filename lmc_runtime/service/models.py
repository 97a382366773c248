"""The typed request and response bodies of the HTTP API."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..arguments import env_problem
from ..sandbox._handoff import SET_PREFIX
from ..sandbox.policy import MINIMUMS

__all__ = [
    "CodeExtras",
    "CodeMessage",
    "CreateSession",
    "ErrorBody",
    "ErrorDetail",
    "Health",
    "LanguageInfo",
    "LanguageList",
    "LimitsModel",
    "RestartRequest",
    "SessionInfo",
    "SessionList",
    "Usage",
    "checked_env",
]


class LimitsModel(BaseModel):
    """Per-session limits; a field left out takes the service's default.

    Strict: a number is a JSON number, never ``true`` (which lax validation took
    as 1, a limit no interpreter starts under) or a string. Each is at least
    its :data:`~lmc_runtime.sandbox.policy.MINIMUMS` value."""

    model_config = ConfigDict(extra="forbid", strict=True)

    memory_bytes: int | None = Field(default=None, ge=MINIMUMS["memory_bytes"])
    cpu_seconds: float | None = Field(default=None, ge=MINIMUMS["cpu_seconds"])
    wall_seconds: float | None = Field(default=None, ge=MINIMUMS["wall_seconds"])
    processes: int | None = Field(default=None, ge=MINIMUMS["processes"])
    file_size_bytes: int | None = Field(default=None, ge=MINIMUMS["file_size_bytes"])
    disk_bytes: int | None = Field(default=None, ge=MINIMUMS["disk_bytes"])
    output_bytes: int | None = Field(default=None, ge=MINIMUMS["output_bytes"])
    cpu_quota: float | None = Field(default=None, ge=MINIMUMS["cpu_quota"])


#: What a variable name of a session's environment must look like.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Variables that configure the dynamic loader and the C library (glibc's list
#: of variables unsafe for setuid programs, and its tunables): a session may not
#: set them. (A session's variables reach only the processes inside its sandbox,
#: as its innermost step starts them: see sandbox/_handoff.py.)
_LOADER_READ = re.compile(
    r"LD_.*|GLIBC_TUNABLES|GCONV_PATH|GETCONF_DIR|HOSTALIASES|LOCALDOMAIN|LOCPATH|MALLOC_.*|"
    r"NIS_PATH|NLSPATH|RESOLV_HOST_CONF|RES_OPTIONS|TZDIR"
)
#: The most one variable may hold with its name: Linux's limit, less the prefix
#: it travels under to the sandbox.
_ENTRY_MAX = 128 * 1024 - 1 - len(SET_PREFIX)


def checked_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` if every name is a plain variable name the host does not read; else
    ``ValueError`` saying which is not."""
    problem = env_problem(env)
    if problem is not None:
        raise ValueError(f"env {problem}")
    for name in env:
        if not _ENV_NAME.fullmatch(name):
            raise ValueError(f"env has an invalid variable name {name[:80]!r}")
        if _LOADER_READ.fullmatch(name):
            raise ValueError(f"env may not set {name}: it configures the dynamic loader")
        if len(name.encode()) + len(env[name].encode()) + 1 > _ENTRY_MAX:
            raise ValueError(f"env {name} is longer than {_ENTRY_MAX} bytes with its name")
    return env


class CreateSession(BaseModel):
    """``POST /v1/sessions``: the languages the session will use, its limits, where
    its code runs and the variables every interpreter of it starts with (strict:
    ``network`` is a JSON boolean, not ``"no"`` or 0)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    languages: list[str] = Field(default_factory=lambda: ["python"], max_length=16)
    network: bool | dict[str, list[str]] | None = Field(
        default=None,
        description='false, true, or an egress policy {"allow": [...], "deny": [...]} '
        "within the server's --allow-network list (names, *.wildcards, addresses, "
        "networks, optional :port)",
    )
    limits: LimitsModel = Field(default_factory=LimitsModel)
    title: str = Field(default="", max_length=200)
    cwd: str = Field(
        default="",
        max_length=4096,
        description="A relative path inside the session's working directory, created "
        "with its parents if missing; code runs there ('' is the working directory).",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        max_length=256,
        description="Variables set for every interpreter of the session; names are "
        "[A-Za-z_][A-Za-z0-9_]*, and not those that configure the dynamic loader (LD_*, "
        "GLIBC_TUNABLES, MALLOC_*, ...). They reach only the processes inside the sandbox.",
    )

    environment: str | None = Field(
        default=None,
        max_length=200,
        description="The environment the session runs in, by name (`lmc env create`); "
        "none: the server's default (`lmc serve --environment`).",
    )

    secrets: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="Secrets of the server (`lmc serve --secret`), by name: each variable "
        "holds a placeholder, which the server replaces by the value in the headers of the "
        "session's HTTP requests to the secret's hosts. The value never enters the sandbox.",
    )

    @field_validator("env")
    @classmethod
    def check_env(cls, env: dict[str, str]) -> dict[str, str]:
        return checked_env(env)


class RestartRequest(BaseModel):
    """``POST /v1/sessions/{id}/restart``: which language's interpreter to restart."""

    model_config = ConfigDict(extra="forbid")

    language: str = "python"


class CodeExtras(BaseModel):
    """``extras`` of a code message: what the runtime reads of it."""

    model_config = ConfigDict(extra="allow")

    env: dict[str, str] | None = Field(
        default=None, description="Variables set for this execution only, then restored."
    )


class CodeMessage(BaseModel):
    """``POST /v1/sessions/{id}/execute``: one LMC code message.

    This documents the body; the service checks it with
    :func:`lmc_runtime.intake.code_message`, which answers what it cannot run."""

    model_config = ConfigDict(extra="allow")

    role: Literal["assistant"] = "assistant"
    type: Literal["code"] = "code"
    format: str = Field(description="The language: a name or an alias (GET /v1/languages).")
    content: str = Field(description="The code.")
    id: str | None = Field(default=None, description="Echoed as in_reply_to in every reply.")
    extras: CodeExtras | None = None


class LanguageInfo(BaseModel):
    """One language the server knows: whether sessions can use it, and if not, why."""

    name: str
    available: bool
    reason: str | None
    aliases: list[str]


class LanguageList(BaseModel):
    """``GET /v1/languages``."""

    languages: list[LanguageInfo]


class Usage(BaseModel):
    """Resource figures for one session, as the sandbox reports them."""

    model_config = ConfigDict(extra="allow")


class SessionInfo(BaseModel):
    """One session as the API shows it (``network``: its egress policy as
    ``{"allow": [...], "deny": [...]}`` when it has one)."""

    id: str
    languages: list[str]
    network: bool | dict[str, list[str]]
    limits: dict[str, Any]
    state: Literal["starting", "idle", "busy", "paused", "closing"]
    created_at: float
    last_active: float
    pooled: bool
    sandboxed: bool
    cwd: str = ""
    title: str = ""
    env: list[str] = Field(default_factory=list, description="The names only, never the values.")
    usage: dict[str, Any] | None = None
    environment: str | None = Field(
        default=None, description="The environment it runs in (None: the server's Python)."
    )


class SessionList(BaseModel):
    """``GET /v1/sessions``."""

    sessions: list[SessionInfo]


class Health(BaseModel):
    """``GET /healthz``."""

    status: Literal["ok", "shutting_down"]
    sessions: int
    pool_ready: int
    #: Transcript messages held in memory because the store fails (0: none).
    transcripts_held: int = 0


class ErrorDetail(BaseModel):
    """What went wrong: a stable ``code`` and a sentence for people."""

    code: str
    message: str


class ErrorBody(BaseModel):
    """Every error response: ``{"error": {"code": ..., "message": ...}}``."""

    error: ErrorDetail
