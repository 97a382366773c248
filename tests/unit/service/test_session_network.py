"""A session's ``network`` checked against the server: false, true, or an egress
policy within the ceiling (403 beyond it, 400 malformed), and never a policy
where there is no sandbox to enforce it."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime.egress.policy import EgressPolicy, parse_ceiling
from lmc_runtime.service.errors import BadNetworkPolicy, NetworkNotAllowed
from lmc_runtime.service.models import CreateSession
from lmc_runtime.service.session_request import session_policy
from lmc_runtime.service.settings import ServiceSettings

TOKEN = "test-token-0123456789"


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short data directory (kernels' unix sockets live under it)."""
    with tempfile.TemporaryDirectory(prefix="lmc-") as folder:
        yield Path(folder)


def _settings(tmp_path: Path, **kwargs: object) -> ServiceSettings:
    return ServiceSettings(data_dir=tmp_path, token=TOKEN, pool_size=0, **kwargs)  # type: ignore[arg-type]


def test_a_policy_is_narrowed_within_the_ceiling(tmp_path: Path) -> None:
    ceiling = parse_ceiling("pypi.org,*.pythonhosted.org")
    settings = _settings(tmp_path, allow_network=True, network_ceiling=ceiling)
    asked = CreateSession(network={"allow": ["pypi.org"], "deny": ["10.0.0.0/8"]})
    network = session_policy(settings, asked).network
    assert isinstance(network, EgressPolicy)
    assert network.describe() == {"allow": ["pypi.org"], "deny": ["10.0.0.0/8"]}
    # true under a ceiling is the ceiling; false stays false
    assert session_policy(settings, CreateSession(network=True)).network == ceiling
    assert session_policy(settings, CreateSession(network=False)).network is False
    with pytest.raises(NetworkNotAllowed, match="outside what this server allows"):
        session_policy(settings, CreateSession(network={"allow": ["deb.debian.org"]}))
    with pytest.raises(BadNetworkPolicy):
        session_policy(settings, CreateSession(network={"allow": ["pypi.org"], "x": []}))


def test_without_a_ceiling_true_is_the_whole_network(tmp_path: Path) -> None:
    settings = _settings(tmp_path, allow_network=True)
    assert session_policy(settings, CreateSession(network=True)).network is True
    with pytest.raises(NetworkNotAllowed):
        session_policy(_settings(tmp_path), CreateSession(network={"allow": ["pypi.org"]}))


def test_no_policy_without_a_sandbox(tmp_path: Path) -> None:
    settings = _settings(tmp_path, allow_network=True, sandbox=False)
    with pytest.raises(NetworkNotAllowed, match="needs the sandbox"):
        session_policy(settings, CreateSession(network={"allow": ["pypi.org"]}))


def test_lmc_serve_refuses_a_ceiling_without_the_sandbox(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "lmc_runtime", "serve", "--no-sandbox", "--port", "0"]
    argv += ["--allow-network", "pypi.org", "--data-dir", str(tmp_path / "data")]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode != 0
    assert "--allow-network ENTRIES needs the sandbox" in done.stderr + done.stdout
