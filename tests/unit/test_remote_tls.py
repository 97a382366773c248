"""The client's TLS settings: a plain ``http`` server's client loads no CA bundle
(it took about 20 ms of every RemoteComputer's start) and can complete no TLS
handshake; an ``https`` one verifies as httpx does by default."""

from __future__ import annotations

import ssl

import anyio
import pytest

from lmc_runtime.remote.models import RemoteTimeouts
from lmc_runtime.remote.rest import Api, _verify


class _BundleLoaded(Exception):
    pass


@pytest.fixture
def bundle_loads_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        raise _BundleLoaded

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", refuse)


def _api(url: str) -> Api:
    api = Api(url, "t" * 24, RemoteTimeouts())
    anyio.run(api.aclose)
    return api


@pytest.mark.usefixtures("bundle_loads_refused")
def test_regression_an_http_client_loads_no_ca_bundle() -> None:
    _api("http://127.0.0.1:9")


@pytest.mark.usefixtures("bundle_loads_refused")
def test_an_https_client_still_loads_the_ca_bundle() -> None:
    with pytest.raises(_BundleLoaded):
        _api("https://127.0.0.1:9")


def test_an_http_client_trusts_no_certificate_at_all() -> None:
    context = _verify("http://example.test")
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.get_ca_certs() == []
    assert context.cert_store_stats()["x509_ca"] == 0


def test_an_https_client_verifies_with_the_default_bundle() -> None:
    assert _verify("https://example.test") is True
    assert _verify("HTTPS://example.test") is True
