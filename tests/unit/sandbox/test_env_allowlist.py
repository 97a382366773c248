"""The environment allowlist matches a variable exactly as ``fnmatchcase`` does
with each pattern, through one expression for all of them."""

from __future__ import annotations

import fnmatch

from hypothesis import given
from hypothesis import strategies as st

from lmc_runtime.sandbox.policy import allowed

_NAMES = st.text(alphabet="ABXYZ_*?[]!-.", max_size=8)


@given(name=_NAMES, patterns=st.lists(_NAMES, max_size=5))
def test_allowed_is_fnmatchcase_with_any_pattern(name: str, patterns: list[str]) -> None:
    expected = any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
    assert allowed(name, tuple(patterns)) is expected


def test_no_pattern_allows_nothing() -> None:
    assert not allowed("PATH", ())
    assert not allowed("", ())
