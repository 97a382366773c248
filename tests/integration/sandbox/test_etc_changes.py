"""A sandbox starts though ``/etc`` changed since the host was looked at.

Regression: the host's facts (which ``/etc`` entries to hide) are kept for a
minute. A ``useradd`` running while they were read left ``/etc/group.lock`` in
the list; the next sandboxes tried to hide that file after it was gone, bwrap
could not make its mount point in the read-only ``/etc`` ("Can't create file
at /etc/group.lock: Read-only file system") and no session started until the
facts were read again.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from lmc_runtime.sandbox import SandboxPolicy
from lmc_runtime.sandbox.hostview import HostView

from .conftest import Opener, needs_bwrap, run, text

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.integration,
    needs_bwrap,
    pytest.mark.skipif(os.geteuid() != 0, reason="writes a private file into /etc"),
]


async def test_a_private_etc_entry_gone_since_the_look_up_does_not_stop_sandboxes(
    sandboxed: Opener,
) -> None:
    private = Path("/etc") / f"lmc-test-{secrets.token_hex(4)}"
    private.write_text("secret")
    private.chmod(0o600)
    host = HostView(ttl=3600)
    try:
        facts = await host.facts(sandboxed=True)
        assert private in facts.hidden  # the look-up saw it
    finally:
        private.unlink()
    async with sandboxed(SandboxPolicy(), host=host) as (_, computer):
        assert "ok" in text(await run(computer, "print('ok')"))


async def test_the_lock_files_of_user_tools_are_not_hidden(sandboxed: Opener) -> None:
    lock = Path("/etc/group.lock")
    if lock.exists():
        pytest.skip("a user tool holds /etc/group.lock now")
    lock.write_text(str(os.getpid()))
    lock.chmod(0o600)
    host = HostView(ttl=3600)
    try:
        facts = await host.facts(sandboxed=True)
    finally:
        lock.unlink()
    assert lock not in facts.hidden
    assert Path("/etc/shadow") in facts.hidden
    async with sandboxed(SandboxPolicy(), host=host) as (_, computer):
        assert "ok" in text(await run(computer, "print('ok')"))
