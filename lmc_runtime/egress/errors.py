"""What a session's network policy is refused with (``lmc serve`` answers them
with 403 and 400, by class, in :mod:`lmc_runtime.service.problems`)."""

from __future__ import annotations

from ..errors import ServiceError

__all__ = ["BadNetworkPolicy", "NetworkNotAllowed"]


class NetworkNotAllowed(ServiceError):
    """A session asked for network access on a service that gives none, or for
    more than the server's ceiling allows (``reason`` says which entry)."""

    def __init__(self, reason: str | None = None) -> None:
        super().__init__(
            reason
            or "this server gives sessions no network access; its operator can allow it "
            "with `lmc serve --allow-network`"
        )
        self.reason = reason


class BadNetworkPolicy(ServiceError, ValueError):
    """A network policy (a session's, or the server's ceiling) is malformed;
    the message names the entry and what is wrong with it."""
