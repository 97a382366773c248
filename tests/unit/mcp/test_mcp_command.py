"""``lmc mcp`` on the command line: refusals before anything serves."""

from __future__ import annotations

import sys
from importlib.util import find_spec

import pytest

from lmc_runtime.cli import main
from lmc_runtime.errors import MissingExtra
from lmc_runtime.mcp import require_sdk


@pytest.mark.skipif(find_spec("mcp_types") is None, reason="the [mcp] extra is not installed")
def test_no_auth_is_refused_off_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--http", "--no-auth", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lmc mcp: ") and "loopback" in err


def test_without_the_sdk_it_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp_types", None)
    with pytest.raises(MissingExtra, match=r"pip install 'lmc-runtime\[mcp\]'"):
        require_sdk()
    assert main(["mcp"]) == 2
    assert "lmc-runtime[mcp]" in capsys.readouterr().err
