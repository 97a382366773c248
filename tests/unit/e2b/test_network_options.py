"""E2B's allowInternetAccess and allowOut/denyOut as an lmc session's network."""

from __future__ import annotations

import pytest

from lmc_runtime.e2b.errors import E2BError
from lmc_runtime.e2b.network import session_network


@pytest.mark.parametrize(
    ("internet", "allow", "deny", "server", "expected"),
    [
        (None, None, None, True, None),  # the server's default
        (True, None, None, True, True),
        (True, None, None, False, False),  # as far as the server allows
        (False, None, None, True, False),
        (False, ["pypi.org"], None, True, {"allow": ["pypi.org"]}),
        (
            True,
            ["pypi.org", "*.pythonhosted.org"],
            ["0.0.0.0/0"],
            True,
            {"allow": ["pypi.org", "*.pythonhosted.org"]},
        ),
        (None, None, ["0.0.0.0/0"], True, False),
        (True, ["pypi.org"], None, True, True),  # allowOut alone restricts nothing
        (
            True,
            ["pypi.org"],
            ["10.0.0.0/8", "203.0.113.7"],
            True,
            {"deny": ["10.0.0.0/8", "203.0.113.7"]},
        ),
    ],
)
def test_e2b_network_options(
    internet: bool | None,
    allow: list[str] | None,
    deny: list[str] | None,
    server: bool,
    expected: object,
) -> None:
    assert session_network(internet, allow, deny, server) == expected


def test_an_allowed_address_inside_a_denied_network_is_refused() -> None:
    with pytest.raises(E2BError, match="lies inside a denyOut network") as caught:
        session_network(True, ["10.1.2.3"], ["10.0.0.0/8"], True)
    assert caught.value.status == 400


def test_deny_takes_addresses_only() -> None:
    with pytest.raises(E2BError, match="denyOut takes addresses"):
        session_network(True, None, ["evil.example"], True)
