"""Service settings validation and the file path check."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime.service.errors import BadPath
from lmc_runtime.service.files import checked_path
from lmc_runtime.service.problems import problem_for
from lmc_runtime.service.settings import ServiceSettings, is_loopback


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("[::1]")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")
    assert not is_loopback("example.com")


def test_no_auth_only_on_loopback() -> None:
    ServiceSettings(data_dir=Path("/tmp/lmc"), no_auth=True)
    with pytest.raises(ValueError, match="only allowed on a loopback"):
        ServiceSettings(data_dir=Path("/tmp/lmc"), host="0.0.0.0", no_auth=True)
    with pytest.raises(ValueError, match="token is required"):
        ServiceSettings(data_dir=Path("/tmp/lmc"))


def test_settings_bounds() -> None:
    tmp_path = Path("/tmp/lmc")
    with pytest.raises(ValueError):
        ServiceSettings(data_dir=tmp_path, token="t", max_sessions=0)
    with pytest.raises(ValueError):
        ServiceSettings(data_dir=tmp_path, token="t", max_sessions=2, pool_size=3)
    with pytest.raises(ValueError, match="too long"):
        ServiceSettings(data_dir=tmp_path / ("x" * 120), token="t")


@pytest.mark.parametrize("good", ["a.txt", "dir/sub/file.bin", ".hidden"])
def test_plain_relative_paths_pass(good: str) -> None:
    assert checked_path(good) == good


@pytest.mark.parametrize("bad", ["", "/etc/passwd", "../x", "a/../../b", "a//b", "./a", "a\x00b"])
def test_escaping_paths_are_400(bad: str) -> None:
    with pytest.raises(BadPath) as refused:
        checked_path(bad)
    problem = problem_for(refused.value)
    assert problem is not None and (problem.status, problem.code) == (400, "bad_path")
