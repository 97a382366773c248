"""Fixtures of the egress tests: the test internet."""

from __future__ import annotations

from .internet import internet

__all__ = ["internet"]
