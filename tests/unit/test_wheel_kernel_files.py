"""Every source file of the node and Java runners is put in the wheel: the wheel
lists them one by one (their installed packages and built classes stay out)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    path.relative_to(ROOT).as_posix()
    for pattern in ("lmc-node/*.js", "lmc-java/*.java")
    for path in (ROOT / "kernels").glob(pattern)
)


def _included() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return project["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]


@pytest.mark.parametrize("source", SOURCES)
def test_regression_each_runner_source_file_is_in_the_wheel(source: str) -> None:
    """Regression: ``sigint.js`` (required by the node runner) was left out of the
    wheel's list, and node died at its start in an installed ``lmc``."""
    included = _included()
    assert included.get(source) == f"lmc_runtime/_{source}", f"{source} is not in the wheel"


def test_the_runners_have_sources() -> None:
    assert any(s.endswith("runner.js") for s in SOURCES) and any(
        s.endswith("LmcJava.java") for s in SOURCES
    )
