"""RemoteComputer's session request body: what is given, checked for its types."""

from __future__ import annotations

import pytest

from lmc_runtime.errors import ArgumentTypeError
from lmc_runtime.remote.spec import session_spec


def test_only_what_is_given_is_sent() -> None:
    assert session_spec(["python"], "", None, None, None, None, None, None) == {
        "languages": ["python"],
        "title": "",
    }


def test_a_policy_environment_and_secrets_are_sent_as_lists() -> None:
    spec = session_spec(
        ("shell",),
        "t",
        "sub",
        {"A": "1"},
        {"allow": ("pypi.org",)},
        {"memory": "1G"},
        "sci",
        ("KEY",),
    )
    assert spec == {
        "languages": ["shell"],
        "title": "t",
        "cwd": "sub",
        "env": {"A": "1"},
        "network": {"allow": ["pypi.org"]},
        "limits": {"memory": "1G"},
        "environment": "sci",
        "secrets": ["KEY"],
    }


@pytest.mark.parametrize(
    ("network", "secrets"), [({"allow": "pypi.org"}, None), (None, "KEY"), (None, ["KEY", 3])]
)
def test_a_string_where_a_list_belongs_is_refused(network: object, secrets: object) -> None:
    with pytest.raises(ArgumentTypeError):
        session_spec(["python"], "", None, None, network, None, None, secrets)  # type: ignore[arg-type]
