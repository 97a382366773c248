"""What ``lmc serve`` and ``lmc mcp`` refuse a request with (the service's other
refusals are in :mod:`lmc_runtime.service.errors`)."""

from __future__ import annotations

from .runtime import LMCError, templated

__all__ = [
    "HostNotAllowed",
    "OriginNotAllowed",
    "ServiceError",
    "TokenRejected",
]


class ServiceError(LMCError):
    """A request the service refuses; ``message`` is a sentence for its client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __post_init__(self) -> None:
        super().__post_init__()
        self.message = str(self)


class TokenRejected(ServiceError):
    """A request carries no bearer token, or the wrong one."""


@templated
class OriginNotAllowed(ServiceError):
    """A web page on another origin made the request on its own."""

    origin: str | None
    template = "origin {origin!r} is not allowed"


@templated
class HostNotAllowed(ServiceError):
    """Without a token, a request named a Host that is not a loopback name."""

    host: str
    template = "without a token only loopback Host names are served, not {host!r}"
