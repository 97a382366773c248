"""Uploads through the lmc API stop at the session's disk limit on a server
without root too, where the disk is a folder whose use is measured, not a
mounted image of its own size: the host's writes count as the code's do."""

from __future__ import annotations

import os

import pytest

from tests.integration.service.server import TOKEN

from .harness import serve_as, temporary_account

pytestmark = pytest.mark.timeout(300)


def test_an_unprivileged_servers_measured_disk_holds_lmc_uploads() -> None:
    """Guards the upload's room check: 10 MB went into a 4 MiB disk before it."""
    with (
        temporary_account() as account,
        serve_as(account, "--pool-size", "0", "--max-sessions", "1", "--disk", "4M") as server,
    ):
        session = server.create()
        statuses = []
        with server.client(TOKEN) as client:
            for i in range(10):  # 10 MB into a 4 MiB disk
                answer = client.put(
                    f"/v1/sessions/{session}/files/fill/{i}.bin", content=os.urandom(1000 * 1000)
                )
                statuses.append(answer.status_code)
                if answer.status_code != 201:
                    assert answer.status_code == 413, answer.text
                    assert "disk" in answer.text
                    break
        assert statuses[-1] == 413 and len(statuses) <= 5, statuses
