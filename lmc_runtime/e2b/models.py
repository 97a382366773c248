"""The control plane's bodies, as E2B's OpenAPI document (``spec/openapi.yml``)
names their fields; fields the SDKs send that this server does not use are
accepted and ignored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from .. import __version__
from .registry import MAX_TIMEOUT, E2BSandbox

__all__ = [
    "AutoResume",
    "ConnectSandbox",
    "NetworkConfig",
    "NewSandbox",
    "ResumedSandbox",
    "TimeoutBody",
    "detail",
    "listed",
    "summary",
]

#: The envd version this server's envd speaks as (the SDKs check it for features):
#: 0.6.4, watches of network mounts allowed (there are none in a sandbox's home),
#: after the entry in watch events (0.6.3), files' metadata (0.6.2), uploads as
#: application/octet-stream (0.5.7), close of stdin (0.5.2), the default user
#: (0.4.0) and commands' stdin (0.3.0).
ENVD_VERSION = "0.6.4"


def _clamped(seconds: int) -> int:
    return min(seconds, int(MAX_TIMEOUT))


#: Seconds of a timeout: a number too large for a clock is the longest timeout.
Seconds = Annotated[int, Field(ge=0), AfterValidator(_clamped)]

#: A sandbox's metadata (kept in memory, shown in every listing): bounded, as
#: the lmc API bounds a session's variables (``envVars``: 256 of them).
Metadata = Annotated[
    dict[Annotated[str, Field(max_length=256)], Annotated[str, Field(max_length=4096)]],
    Field(max_length=100),
]
EnvVars = Annotated[dict[str, str], Field(max_length=256)]


class NetworkConfig(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    allow_out: list[str] | None = Field(default=None, alias="allowOut")
    deny_out: list[str] | None = Field(default=None, alias="denyOut")
    allow_public_traffic: bool | None = Field(default=None, alias="allowPublicTraffic")


class AutoResume(BaseModel):
    """``autoResume``: whether a paused sandbox's own traffic resumes it."""

    model_config = ConfigDict(extra="allow")

    enabled: bool = False


class NewSandbox(BaseModel):
    """``POST /sandboxes``."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    template_id: str = Field(alias="templateID", min_length=1, max_length=200)
    timeout: Seconds = 15
    auto_pause: bool = Field(default=False, alias="autoPause")
    auto_resume: AutoResume | None = Field(default=None, alias="autoResume")
    secure: bool | None = None
    allow_internet_access: bool | None = None
    network: NetworkConfig | None = None
    metadata: Metadata | None = None
    env_vars: EnvVars | None = Field(default=None, alias="envVars")
    mcp: dict[str, Any] | None = None
    volume_mounts: list[dict[str, Any]] | None = Field(default=None, alias="volumeMounts")


class TimeoutBody(BaseModel):
    """``POST /sandboxes/{id}/timeout``."""

    timeout: Seconds


class ConnectSandbox(BaseModel):
    """``POST /sandboxes/{id}/connect``."""

    model_config = ConfigDict(extra="allow")

    timeout: Seconds = 300


class ResumedSandbox(BaseModel):
    """``POST /sandboxes/{id}/resume``."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    timeout: Seconds = 15
    auto_pause: bool | None = Field(default=None, alias="autoPause")


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat().replace("+00:00", "Z")


def summary(sandbox: E2BSandbox, domain: str | None) -> dict[str, Any]:
    """The ``Sandbox`` body: what creating or connecting answers."""
    return {
        "templateID": sandbox.template,
        "sandboxID": sandbox.id,
        "alias": sandbox.template,
        "clientID": "lmc-runtime",
        "envdVersion": ENVD_VERSION,
        "envdAccessToken": sandbox.access_token,
        "trafficAccessToken": None,
        "domain": domain,
    }


def listed(sandbox: E2BSandbox) -> dict[str, Any]:
    """The ``ListedSandbox`` body."""
    limits = sandbox.session.policy.limits
    memory = limits.memory_bytes
    disk = limits.disk_bytes
    return {
        "templateID": sandbox.template,
        "alias": sandbox.template,
        "sandboxID": sandbox.id,
        "clientID": "lmc-runtime",
        "startedAt": _when(sandbox.started_at),
        "endAt": _when(sandbox.end_at),
        "cpuCount": max(1, round(limits.cpu_quota)) if limits.cpu_quota else 1,
        "memoryMB": memory // (1 << 20) if memory else 0,
        "diskSizeMB": disk // (1 << 20) if disk else 0,
        "metadata": dict(sandbox.metadata),
        "state": sandbox.state,
        "envdVersion": ENVD_VERSION,
    }


def detail(sandbox: E2BSandbox, domain: str | None) -> dict[str, Any]:
    """The ``SandboxDetail`` body."""
    return {
        **listed(sandbox),
        "envdAccessToken": sandbox.access_token,
        "allowInternetAccess": sandbox.allow_internet,
        "domain": domain,
        "lifecycle": {
            "onTimeout": "pause" if sandbox.auto_pause else "kill",
            "autoResume": sandbox.auto_resume,
        },
        "version": __version__,
    }
