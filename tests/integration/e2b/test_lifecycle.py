"""The control plane through E2B's Python SDK: create, info, list, timeout, kill."""

from __future__ import annotations

import pytest
from e2b import SandboxException
from e2b_code_interpreter import Sandbox

from tests.integration.service.server import Server

pytestmark = pytest.mark.timeout(180)


def test_a_sandbox_is_created_listed_and_killed_through_the_sdk(e2b_env: Server) -> None:
    sbx = Sandbox.create(timeout=60, metadata={"owner": "tests"})
    try:
        info = sbx.get_info()
        assert info.sandbox_id == sbx.sandbox_id
        assert info.metadata == {"owner": "tests"}
        listed = Sandbox.list().next_items()
        assert sbx.sandbox_id in [s.sandbox_id for s in listed]
        sbx.set_timeout(30)
    finally:
        sbx.kill()
    assert sbx.sandbox_id not in [s.sandbox_id for s in Sandbox.list().next_items()]


def test_an_unknown_sandbox_is_not_found_in_e2b_terms(e2b_env: Server) -> None:
    with pytest.raises(SandboxException):
        Sandbox.connect("a" * 32)


def test_a_sandbox_id_is_never_logged_whole(e2b_env: Server) -> None:
    sbx = Sandbox.create(timeout=60)
    sbx.set_timeout(30)
    sbx.kill()
    assert sbx.sandbox_id not in e2b_env.log()
