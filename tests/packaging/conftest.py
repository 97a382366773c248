"""The wheel of this checkout, built once for every packaging test."""

from __future__ import annotations

from pathlib import Path

import pytest

from .wheels import REPO, build_wheel


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's wheel, built once (outside the repository) and installed by
    each module into a fresh virtualenv of its own."""
    dist = tmp_path_factory.mktemp("dist")
    assert not dist.resolve().is_relative_to(REPO)
    return build_wheel(dist)
