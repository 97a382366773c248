"""The host's own addresses are internal whatever their range, so that no name
reaches the host's services through them. A host gains addresses while the
server runs (a DHCP lease renewed to another address, IPv6 temporary addresses
made anew each day): the policy must know them too, not only the ones the host
had when first asked."""

from __future__ import annotations

import pytest

from lmc_runtime.egress import local
from lmc_runtime.egress.policy import EgressPolicy, parse_entries


def test_an_address_the_host_gains_later_is_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    addresses = ["203.0.113.10"]
    monkeypatch.setattr(local, "host_addresses", lambda: list(addresses))
    monkeypatch.setattr(local, "REFRESH", 0.0)
    policy = EgressPolicy(parse_entries(["*"], "allow"))
    assert policy.allows_resolved("gained.example", "8.8.4.4", 443)
    addresses.append("8.8.4.4")  # the host now has it (a new lease, say)
    assert not policy.allows_resolved("gained.example", "8.8.4.4", 443)
    assert not policy.allows_address("8.8.4.4", 443)
