"""The server's own certificate authority, for the connections the secrets broker
terminates: made when the server starts (EC P-256), its key only ever in memory.

A session that asks for a secret trusts it (see :mod:`lmc_runtime.sandbox.view`);
the broker presents a short-lived leaf certificate for each name, issued on first
use and cached until it nears its end. Python's ``ssl`` loads a certificate and key
from files only: they are handed to it through an anonymous memory file
(``memfd``), never a file on a disk.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .local import SYSTEM_BUNDLES

__all__ = ["SYSTEM_BUNDLES", "EgressCA", "system_bundle"]

#: How long a leaf certificate is valid, and how long before its end a new one is made.
LEAF_VALIDITY = datetime.timedelta(days=1)
_LEAF_RENEW = datetime.timedelta(hours=1)
#: A leaf's start is back-dated a little, for clocks slightly behind the server's.
_SKEW = datetime.timedelta(minutes=5)
#: The most leaf contexts kept (names a session asked for); the oldest go first.
_LEAVES_KEPT = 1024


def system_bundle() -> bytes:
    """The system's CAs (PEM) from the first bundle of :data:`SYSTEM_BUNDLES`
    found, else from what Python's ``ssl`` was built to read; b"" if none."""
    candidates = [*SYSTEM_BUNDLES, ssl.get_default_verify_paths().openssl_cafile]
    for candidate in candidates:
        try:
            return Path(candidate).read_bytes()
        except OSError:
            continue
    return b""


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _subject_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


class EgressCA:
    """A certificate authority made in memory, and the leaf contexts it signs."""

    def __init__(self, common_name: str = "lmc-runtime egress CA") -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        public = self._key.public_key()
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _SKEW)
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self._leaves: dict[str, tuple[datetime.datetime, ssl.SSLContext]] = {}
        self._lock = threading.Lock()

    @property
    def pem(self) -> bytes:
        """The CA's certificate, PEM."""
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def issue(self, name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        """A new leaf certificate for ``name`` (a DNS name or an IP address) and its key."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        ca_key_id = x509.SubjectKeyIdentifier.from_public_key(self._key.public_key())
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name[:64])]))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _SKEW)
            .not_valid_after(now + LEAF_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([_subject_name(name)]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_key_id),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        return certificate, key

    def server_context(self, name: str) -> ssl.SSLContext:
        """A TLS server context presenting a leaf certificate for ``name``
        (HTTP/1.1 only), cached until an hour before the leaf's end."""
        with self._lock:
            cached = self._leaves.get(name)
            if cached is not None and cached[0] - _LEAF_RENEW > _now():
                return cached[1]
            certificate, key = self.issue(name)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.set_alpn_protocols(["http/1.1"])
            chain = certificate.public_bytes(serialization.Encoding.PEM) + self.pem
            _load_chain(context, chain, _pem_key(key))
            if len(self._leaves) >= _LEAVES_KEPT:
                self._leaves.pop(next(iter(self._leaves)))
            self._leaves[name] = (certificate.not_valid_after_utc, context)
            return context

    def write_files(self, folder: Path) -> tuple[Path, Path]:
        """Write the CA's certificate (``egress-ca.pem``) and a bundle of the
        system's CAs with it (``egress-ca-bundle.pem``) into ``folder``, readable
        by all (sandboxes bind them read-only); their paths."""
        folder.mkdir(mode=0o755, parents=True, exist_ok=True)
        system = system_bundle()
        if system and not system.endswith(b"\n"):
            system += b"\n"
        ca, bundle = folder / "egress-ca.pem", folder / "egress-ca-bundle.pem"
        for path, data in ((ca, self.pem), (bundle, system + self.pem)):
            temporary = path.with_name(path.name + ".new")
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
            fd = os.open(temporary, flags, 0o644)
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.chmod(temporary, 0o644)
            os.replace(temporary, path)
        return ca, bundle


def _load_chain(context: ssl.SSLContext, chain: bytes, key: bytes) -> None:
    """``context.load_cert_chain`` from memory: the certificate chain and key go
    through anonymous memory files, closed as soon as they are read."""
    cert_fd = os.memfd_create("lmc-egress-leaf", os.MFD_CLOEXEC)
    key_fd = os.memfd_create("lmc-egress-key", os.MFD_CLOEXEC)
    try:
        os.write(cert_fd, chain)
        os.write(key_fd, key)
        context.load_cert_chain(f"/proc/self/fd/{cert_fd}", f"/proc/self/fd/{key_fd}")
    finally:
        os.close(cert_fd)
        os.close(key_fd)
