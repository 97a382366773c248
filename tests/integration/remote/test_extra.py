"""Without the [client] extra, the client SDK and --remote say in one line what to install."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..lmc_cli import blocking_env, import_without, lmc

LINE = "lmc_runtime.remote needs the [client] extra: pip install 'lmc-runtime[client]'"


@pytest.mark.parametrize("blocked", ["httpx", "websockets"])
def test_importing_the_client_without_its_extra_raises_missing_extra(
    tmp_path: Path, blocked: str
) -> None:
    assert import_without(tmp_path, blocked, "lmc_runtime.remote") == f"True {LINE}\n"


def test_lmc_run_remote_without_the_extra_says_what_to_install(tmp_path: Path) -> None:
    done = lmc("run", "--remote", "http://127.0.0.1:9", env=blocking_env(tmp_path, "websockets"))
    assert done.returncode == 2
    assert done.stderr == LINE + "\n" and done.stdout == ""
