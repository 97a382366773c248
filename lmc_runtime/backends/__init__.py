"""Language backends behind one Protocol, loaded lazily through a registry."""

from __future__ import annotations

from .base import Availability, Backend, ExecutionOptions, Session, SessionSettings
from .registry import BackendEntry, Registry, default_entries

__all__ = [
    "Availability",
    "Backend",
    "BackendEntry",
    "ExecutionOptions",
    "Registry",
    "Session",
    "SessionSettings",
    "default_entries",
]
