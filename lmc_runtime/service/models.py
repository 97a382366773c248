"""The typed request and response bodies of the HTTP API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CreateSession",
    "ErrorBody",
    "ErrorDetail",
    "Health",
    "LimitsModel",
    "RestartRequest",
    "SessionInfo",
    "SessionList",
    "Usage",
]


class LimitsModel(BaseModel):
    """Per-session limits; a field left out takes the service's default."""

    model_config = ConfigDict(extra="forbid")

    memory_bytes: int | None = Field(default=None, gt=0)
    cpu_seconds: float | None = Field(default=None, gt=0)
    wall_seconds: float | None = Field(default=None, gt=0)
    processes: int | None = Field(default=None, gt=0)
    file_size_bytes: int | None = Field(default=None, gt=0)
    disk_bytes: int | None = Field(default=None, gt=0)
    output_bytes: int | None = Field(default=None, ge=64)
    cpu_quota: float | None = Field(default=None, gt=0)


class CreateSession(BaseModel):
    """``POST /v1/sessions``: the languages the session will use and its limits."""

    model_config = ConfigDict(extra="forbid")

    languages: list[str] = Field(default_factory=lambda: ["python"], max_length=16)
    network: bool | None = None
    limits: LimitsModel = Field(default_factory=LimitsModel)
    title: str = Field(default="", max_length=200)


class RestartRequest(BaseModel):
    """``POST /v1/sessions/{id}/restart``: which language's interpreter to restart."""

    model_config = ConfigDict(extra="forbid")

    language: str = "python"


class Usage(BaseModel):
    """Resource figures for one session, as the sandbox reports them."""

    model_config = ConfigDict(extra="allow")


class SessionInfo(BaseModel):
    """One session as the API shows it."""

    id: str
    languages: list[str]
    network: bool
    limits: dict[str, Any]
    state: Literal["starting", "idle", "busy", "closing"]
    created_at: float
    last_active: float
    pooled: bool
    sandboxed: bool
    usage: dict[str, Any] | None = None


class SessionList(BaseModel):
    """``GET /v1/sessions``."""

    sessions: list[SessionInfo]


class Health(BaseModel):
    """``GET /healthz``."""

    status: Literal["ok", "shutting_down"]
    sessions: int
    pool_ready: int


class ErrorDetail(BaseModel):
    """What went wrong: a stable ``code`` and a sentence for people."""

    code: str
    message: str


class ErrorBody(BaseModel):
    """Every error response: ``{"error": {"code": ..., "message": ...}}``."""

    error: ErrorDetail
