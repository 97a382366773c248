"""``lmc serve --secret`` and a session's ``{"secrets": [...]}``: the server's
configuration, the session's policy and environment, and what its sandbox binds."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime.egress.secret_specs import parse_secret
from lmc_runtime.sandbox.policy import SandboxPolicy
from lmc_runtime.sandbox.view import SANDBOX_CA, SANDBOX_CA_BUNDLE, SandboxView, view_env
from lmc_runtime.service.command import configure_parser
from lmc_runtime.service.config import ConfigError, load
from lmc_runtime.service.errors import InvalidRequest
from lmc_runtime.service.models import CreateSession
from lmc_runtime.service.secret_sessions import secrets_policy, server_secrets
from lmc_runtime.service.settings import ServiceSettings

VALUE = "sk-unit-3e1f0c5d7a9b2468ace013579bdf2468"
TOKEN = {"LMC_TOKEN": "t0ken-value-0123456789"}


@pytest.fixture
def data() -> Iterator[Path]:
    """A data directory with a short path (sessions' sockets live under it)."""
    folder = Path(tempfile.mkdtemp(prefix="lmc-sec-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def serve_config(argv: list[str], env: dict[str, str]) -> ServiceSettings:
    parser = argparse.ArgumentParser(prog="lmc serve")
    configure_parser(parser)
    return load(parser.parse_args(["--data-dir", "/tmp/lmc-cfg", *argv]), {**TOKEN, **env}).settings


def test_secrets_are_repeated_flags_or_one_variable(tmp_path: Path) -> None:
    file = tmp_path / "key"
    file.write_text(VALUE)
    argv = ["--secret", "API_KEY:api.test", "--secret", f"GH:github.test@{file}"]
    settings = serve_config(argv, {"API_KEY": VALUE})
    assert [str(spec) for spec in settings.secrets] == [
        "API_KEY:api.test",
        f"GH:github.test@{file}",
    ]
    from_env = serve_config([], {"LMC_SERVE_SECRET": "A:a.test;B:b.test:8443", "A": "x", "B": "y"})
    assert [spec.name for spec in from_env.secrets] == ["A", "B"]
    assert VALUE not in repr(settings)


def test_a_secret_without_a_value_stops_the_server() -> None:
    with pytest.raises(ConfigError, match="no variable API_KEY"):
        serve_config(["--secret", "API_KEY:api.test"], {})
    with pytest.raises(ConfigError, match="control character") as caught:
        serve_config(["--secret", "API_KEY:api.test"], {"API_KEY": VALUE + "\n"})
    assert VALUE not in str(caught.value)


def test_a_session_asks_for_known_secrets_only(data: Path) -> None:
    settings = ServiceSettings(data_dir=data, no_auth=True, secrets=(parse_secret("K:a.test"),))
    secrets = server_secrets(settings, {"K": VALUE})
    assert secrets is not None
    assert secrets.trust.ca.read_bytes() == secrets.broker.ca.pem
    request = CreateSession.model_validate({"secrets": ["K"], "env": {"K": "mine"}})
    policy = secrets_policy(secrets, SandboxPolicy(), request.secrets)
    assert policy.secrets == ("K",) and policy.trust == secrets.trust
    opened = secrets.open("s1", policy)
    assert opened.env["K"].startswith("lmc-secret-k-") and VALUE not in str(opened)
    assert secrets.broker.wants("s1", "a.test", 443)
    secrets.close("s1")
    assert not secrets.broker.wants("s1", "a.test", 443)
    with pytest.raises(InvalidRequest, match="unknown secret 'NOPE'"):
        secrets_policy(secrets, SandboxPolicy(), ["NOPE"])
    with pytest.raises(InvalidRequest, match="no secrets"):
        secrets_policy(None, SandboxPolicy(), ["K"])
    assert secrets_policy(None, SandboxPolicy(), []) == SandboxPolicy()


def test_the_servers_environment_loses_the_value(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K_FROM_ENV", VALUE)
    spec = parse_secret("K_FROM_ENV:a.test")
    secrets = server_secrets(ServiceSettings(data_dir=data, no_auth=True, secrets=(spec,)))
    assert secrets is not None and "K_FROM_ENV" not in os.environ
    token = secrets.broker.open("s1", ["K_FROM_ENV"])["K_FROM_ENV"]
    assert secrets.broker.replacements("s1", "a.test", 443) == {token.encode(): VALUE.encode()}


def test_the_sandbox_trusts_the_egress_ca(data: Path, tmp_path: Path) -> None:
    settings = ServiceSettings(data_dir=data, no_auth=True, secrets=(parse_secret("K:a.test"),))
    secrets = server_secrets(settings, {"K": VALUE})
    assert secrets is not None
    policy = secrets.open("s1", secrets.policy(SandboxPolicy(), ["K"]))
    env = view_env({"PATH": "/usr/bin"}, policy, "/home/user", "/run/lmc")
    assert env["SSL_CERT_FILE"] == env["REQUESTS_CA_BUNDLE"] == SANDBOX_CA_BUNDLE
    assert env["NODE_EXTRA_CA_CERTS"] == SANDBOX_CA
    assert VALUE not in str(env)
    host = view_env({"PATH": "/usr/bin"}, policy, str(tmp_path), str(tmp_path / "runtime"))
    assert host["SSL_CERT_FILE"] == str(secrets.trust.bundle)  # no sandbox: the host's file
    plain = view_env({"PATH": "/usr/bin"}, SandboxPolicy(), "/home/user", "/run/lmc")
    assert "SSL_CERT_FILE" not in plain
    folder = tmp_path / "view"
    view = SandboxView(folder, folder, folder / "passwd", folder / "group", trust=secrets.trust)
    options = view.bwrap_options()
    binds = {options[i + 2]: options[i + 1] for i, o in enumerate(options) if o == "--ro-bind"}
    assert binds[SANDBOX_CA] == str(secrets.trust.ca)
    assert binds[SANDBOX_CA_BUNDLE] == str(secrets.trust.bundle)
    if Path("/etc/ssl/certs/ca-certificates.crt").is_file():
        assert binds["/etc/ssl/certs/ca-certificates.crt"] == str(secrets.trust.bundle)
