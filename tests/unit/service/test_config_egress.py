"""``lmc serve --allow-network [ENTRIES]`` and ``--egress-dns``: the bare switch
as before, a comma list as the sessions' ceiling, the gateway's DNS server."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lmc_runtime.service.command import configure_parser
from lmc_runtime.service.config import ConfigError, ServeConfig, load

DATA = "/tmp/lmc-cfg"


def _load(argv: list[str], env: dict[str, str] | None = None) -> ServeConfig:
    parser = argparse.ArgumentParser(prog="lmc serve")
    configure_parser(parser)
    args = parser.parse_args(["--data-dir", DATA, *argv])
    return load(args, {"LMC_TOKEN": "t0ken-value-0123456789", **(env or {})})


def test_the_bare_switch_allows_network_without_a_ceiling() -> None:
    settings = _load(["--allow-network", "--pool-size", "1"]).settings
    assert settings.allow_network and settings.network_ceiling is None
    assert not _load([]).settings.allow_network
    assert _load([], {"LMC_SERVE_ALLOW_NETWORK": "true"}).settings.allow_network
    assert not _load([], {"LMC_SERVE_ALLOW_NETWORK": "no"}).settings.allow_network


def test_a_comma_list_is_the_ceiling() -> None:
    settings = _load(["--allow-network", "pypi.org,*.pythonhosted.org"]).settings
    assert settings.allow_network and settings.network_ceiling is not None
    assert [e.text for e in settings.network_ceiling.allow] == ["pypi.org", "*.pythonhosted.org"]
    from_env = _load([], {"LMC_SERVE_ALLOW_NETWORK": "registry.npmjs.org:443"}).settings
    assert from_env.network_ceiling is not None
    assert from_env.network_ceiling.allows_name("registry.npmjs.org", 443)


def test_a_ceiling_from_the_file(tmp_path: Path) -> None:
    file = tmp_path / "serve.toml"
    file.write_text('allow_network = ["pypi.org", "10.0.0.0/8:5432"]\n')
    settings = _load(["--config", str(file)]).settings
    assert settings.network_ceiling is not None
    assert settings.network_ceiling.allows_address("10.1.2.3", 5432)


def test_bad_entries_and_dns_servers_are_named() -> None:
    with pytest.raises(ConfigError, match=r"--allow-network: .*'pypi\.org:http'"):
        _load(["--allow-network", "pypi.org,pypi.org:http"])
    with pytest.raises(ConfigError, match="--egress-dns"):
        _load(["--egress-dns", "dns.example:53"])
    assert _load(["--egress-dns", "127.0.0.53:5353"]).settings.egress_dns == ("127.0.0.53", 5353)
    assert _load(["--egress-dns", "[::1]"]).settings.egress_dns == ("::1", 53)
    assert _load([]).settings.egress_dns is None
