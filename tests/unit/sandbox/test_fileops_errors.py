"""The files operations raise errors of their own, which know nothing of HTTP; the
service maps each, by class, to the status, code and sentence it answered before."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime.errors import LMCError, ServiceError
from lmc_runtime.sandbox import fileops
from lmc_runtime.service.problems import problem_for


def test_fileops_raise_their_own_errors_not_service_ones(tmp_path: Path) -> None:
    """A missing path is a fileops error (an LMCError, as MCP's tools expect), not
    one of the service's, so that the sandbox does not depend on the service."""
    with pytest.raises(fileops.NoSuchFile) as caught:
        fileops.stat_path(tmp_path, "missing")
    assert isinstance(caught.value, fileops.FileOpError)
    assert isinstance(caught.value, LMCError)
    assert not isinstance(caught.value, ServiceError)


@pytest.mark.parametrize(
    ("error", "status", "code", "message"),
    [
        (lambda: fileops.NoSuchFile("a"), 404, "file_not_found", "no file 'a' in the session"),
        (lambda: fileops.AlreadyExists("a"), 409, "file_exists", "'a' already exists"),
        (
            lambda: fileops.NotEmpty("a"),
            409,
            "directory_not_empty",
            "'a' is a directory that is not empty",
        ),
        (
            lambda: fileops.NotADirectory("a"),
            400,
            "not_a_directory",
            "'a' is not a directory, or goes through a file",
        ),
        (lambda: fileops.IsADirectory("a"), 400, "is_a_directory", "'a' is a directory"),
        (
            lambda: fileops.Refused("a", "is a FIFO: refused"),
            400,
            "unsafe_path",
            "'a' is a FIFO: refused",
        ),
        (
            lambda: fileops.BadDestination("b", "cannot move 'a' into itself"),
            400,
            "bad_path",
            "cannot move 'a' into itself",
        ),
    ],
)
def test_service_maps_each_fileops_error_by_class(
    error: object, status: int, code: str, message: str
) -> None:
    """Each fileops error answers the status, code and sentence of the service error
    it replaces."""
    assert callable(error)
    problem = problem_for(error())
    assert problem is not None
    assert (problem.status, problem.code, problem.message) == (status, code, message)


def test_kept_changing_is_a_conflict(tmp_path: Path) -> None:
    """A folder the code kept changing is still a 409 directory_not_empty."""
    from lmc_runtime.sandbox.fileops._ops import KeptChanging

    problem = problem_for(KeptChanging("a", "removed"))
    assert problem is not None
    assert (problem.status, problem.code) == (409, "directory_not_empty")
    assert isinstance(KeptChanging("a", "removed"), fileops.NotEmpty)
