"""The server's CA: its leaf certificates validate against it with Python's ssl."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from lmc_runtime.egress.ca import EgressCA


def handshake(server: ssl.SSLContext, client: ssl.SSLContext, name: str) -> ssl.SSLObject:
    """A TLS handshake between the two contexts in memory; the client's end."""
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    tls_client = client.wrap_bio(c_in, c_out, server_hostname=name)
    tls_server = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for side, tls in (("client", tls_client), ("server", tls_server)):
            if not done[side]:
                try:
                    tls.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return tls_client
    raise AssertionError("the handshake did not end")


def test_a_leaf_validates_against_the_ca() -> None:
    ca = EgressCA()
    client = ssl.create_default_context(cadata=ca.pem.decode())
    tls = handshake(ca.server_context("api.example.com"), client, "api.example.com")
    peer = tls.getpeercert()
    assert peer is not None and peer["subjectAltName"] == (("DNS", "api.example.com"),)
    assert tls.selected_alpn_protocol() is None or tls.selected_alpn_protocol() == "http/1.1"
    assert ca.server_context("api.example.com") is ca.server_context("api.example.com")


def test_a_leaf_for_an_address_and_not_for_another_name() -> None:
    ca = EgressCA()
    client = ssl.create_default_context(cadata=ca.pem.decode())
    handshake(ca.server_context("10.1.2.3"), client, "10.1.2.3")
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(ca.server_context("a.test"), client, "b.test")


def test_another_servers_ca_is_not_trusted() -> None:
    client = ssl.create_default_context(cadata=EgressCA().pem.decode())
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(EgressCA().server_context("a.test"), client, "a.test")


def test_its_files_the_ca_alone_and_with_the_systems(tmp_path: Path) -> None:
    ca = EgressCA()
    cert, bundle = ca.write_files(tmp_path / "egress")
    assert cert.read_bytes() == ca.pem
    assert bundle.read_bytes().endswith(ca.pem)
    assert cert.stat().st_mode & 0o777 == 0o644 == bundle.stat().st_mode & 0o777
    assert b"PRIVATE KEY" not in cert.read_bytes() + bundle.read_bytes()
    ssl.create_default_context(cafile=str(bundle))  # a bundle ssl loads
