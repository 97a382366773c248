"""A small internet of local servers in network namespaces, for the egress
tests and ``lmc bench --only egress`` (root and ``ip netns`` needed)."""

from __future__ import annotations

from .netns import netns_problem
from .world import ALLOWED, OTHER, WILD, TestInternet

__all__ = ["ALLOWED", "OTHER", "WILD", "TestInternet", "netns_problem"]
