"""What a session's environment is refused with (``lmc serve`` answers them with
400, by class, in :mod:`lmc_runtime.service.problems`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ServiceError
from ..errors.runtime import templated

__all__ = ["EnvironmentBroken", "UnknownEnvironment"]


class UnknownEnvironment(ServiceError, LookupError):
    """No environment has this name (``known`` lists those there are)."""

    def __init__(self, name: str, known: Sequence[str] = ()) -> None:
        there = f"the environments are {', '.join(known)}" if known else "there are none"
        super().__init__(
            f"no environment {name[:80]!r}: {there} (the operator makes them with `lmc env create`)"
        )
        self.name = name
        self.known = tuple(known)


@templated
class EnvironmentBroken(ServiceError):
    """An environment cannot run sessions; ``reason`` says what is wrong with it."""

    name: str
    reason: str
    template = "the environment {name!r} cannot be used: {reason}"
