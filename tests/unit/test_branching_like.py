"""``BranchingLike``: the checkpoint methods ``Computer`` and ``RemoteComputer`` share."""

from __future__ import annotations

import anyio
import pytest

from lmc_runtime import Computer
from lmc_runtime.computer_like import BranchingLike
from lmc_runtime.errors import (
    CheckpointNotFound,
    CheckpointsUnsupported,
    RemoteCheckpointNotFound,
    RemoteCheckpointsUnsupported,
)
from lmc_runtime.remote import RemoteComputer
from lmc_runtime.remote.problems import error_from


def test_both_computers_are_branching_like() -> None:
    """Both have every member of the protocol (no server needed: nothing opens)."""
    local = Computer()
    remote = RemoteComputer("http://127.0.0.1:9", token="t")
    try:
        assert isinstance(local, BranchingLike)
        assert isinstance(remote, BranchingLike)
    finally:
        local.close()
        remote.close()


def test_remote_refuses_shell_as_the_local_computer_does() -> None:
    """A language without checkpoints is refused before any request is made."""
    remote = RemoteComputer("http://127.0.0.1:9", token="t")
    try:
        with pytest.raises(CheckpointsUnsupported, match="not supported for shell"):
            anyio.run(remote.acheckpoint, "shell")
    finally:
        remote.close()


@pytest.mark.parametrize(
    ("status", "code", "cls", "local"),
    [
        (404, "checkpoint_not_found", RemoteCheckpointNotFound, CheckpointNotFound),
        (410, "checkpoint_gone", RemoteCheckpointNotFound, CheckpointNotFound),
        (400, "checkpoints_unsupported", RemoteCheckpointsUnsupported, CheckpointsUnsupported),
    ],
)
def test_server_refusals_are_the_local_errors(
    status: int, code: str, cls: type[Exception], local: type[Exception]
) -> None:
    error = error_from(status, code, "said")
    assert isinstance(error, cls) and isinstance(error, local)
