"""Environments: named sets of interpreters and packages that sessions run in
(``lmc env create``; ``{"environment": NAME}`` when a session is created)."""

from __future__ import annotations

from ..sandbox.environment import NAME_PATTERN, Environment, name_problem

__all__ = ["NAME_PATTERN", "Environment", "name_problem"]
