"""Signed file URLs of a secure sandbox (``download_url``, ``upload_url``): usable
as they are, with no header, through ``E2B_SANDBOX_URL``; refused when forged,
expired, made for another operation, or signed by another sandbox's token."""

from __future__ import annotations

import httpx
import pytest
from e2b import Sandbox

from tests.integration.service.server import Server

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def secure(e2b_env: Server):  # type: ignore[no-untyped-def]
    sbx = Sandbox.create(timeout=120, secure=True)
    try:
        yield sbx
    finally:
        sbx.kill()


def test_a_signed_download_and_upload_work_with_no_header(secure: Sandbox) -> None:
    secure.files.write("/home/user/signed.txt", "signed content")
    url = secure.download_url("/home/user/signed.txt")
    got = httpx.get(url, timeout=30)
    assert (got.status_code, got.text) == (200, "signed content")
    up = secure.upload_url("/home/user/up.txt")
    sent = httpx.post(url=up, files={"file": ("up.txt", b"uploaded")}, timeout=30)
    assert sent.status_code == 200, sent.text
    assert secure.files.read("/home/user/up.txt") == "uploaded"


def test_forged_expired_and_misused_signatures_are_refused(
    secure: Sandbox, e2b_env: Server
) -> None:
    """Guards the signature check: without the token's hash, no file is reached."""
    secure.files.write("/home/user/secret.txt", "secret")
    url = secure.download_url("/home/user/secret.txt")
    forged = url[: url.index("signature=") + len("signature=v1_")] + "A" * 43
    assert httpx.get(forged, timeout=30).status_code == 401
    other_path = url.replace("secret.txt", "other.txt")
    assert httpx.get(other_path, timeout=30).status_code == 401
    as_upload = httpx.post(url, files={"file": ("x", b"x")}, timeout=30)  # a read signature
    assert as_upload.status_code == 401
    expired = secure.download_url("/home/user/secret.txt", use_signature_expiration=-120)
    refused = httpx.get(expired, timeout=30)
    assert refused.status_code == 401
    assert refused.json() == {"code": 401, "message": "signature is already expired"}
    other = Sandbox.create(timeout=60, secure=True)
    try:
        # The other sandbox's own URL reaches its own file, never this one's.
        other.files.write("/home/user/secret.txt", "other's")
        assert httpx.get(other.download_url("/home/user/secret.txt"), timeout=30).text == "other's"
    finally:
        other.kill()
    assert secure.sandbox_id[:12] not in e2b_env.log()
