"""The service's refusals (ServiceError and its subclasses) and the one table that
maps them to an HTTP status, a ``code`` and a message, over HTTP as in JSON."""

from __future__ import annotations

import inspect

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from lmc_runtime import errors
from lmc_runtime.errors import (
    HostNotAllowed,
    MessageError,
    OriginNotAllowed,
    ServiceError,
    TokenRejected,
)
from lmc_runtime.service import errors as refusals
from lmc_runtime.service.errors import (
    BadNetworkPolicy,
    BadPath,
    CapacityExceeded,
    CheckpointGone,
    CheckpointMemory,
    CheckpointUnknown,
    DirectoryNotEmpty,
    DiskLimitExceeded,
    EnvironmentBroken,
    FileExists,
    InvalidRequest,
    LanguageUnavailable,
    LimitTooHigh,
    MalformedRequest,
    NetworkNotAllowed,
    NotARegularFile,
    PathIsDirectory,
    PathNotDirectory,
    PathRefused,
    RequestTooLarge,
    ServiceUnavailable,
    SessionBusy,
    SessionEnded,
    SessionFileNotFound,
    SessionLost,
    SessionNotFound,
    SessionStartFailed,
    ShuttingDown,
    TooManyCheckpoints,
    UnknownEnvironment,
    UnknownLanguage,
)
from lmc_runtime.service.problems import Problem, install_handlers, problem_for

#: One instance of every refusal, with the status and code clients have always seen.
CASES: list[tuple[ServiceError, int, str, str]] = [
    (SessionNotFound("abc"), 404, "not_found", "no session 'abc'"),
    (SessionEnded("abc", "it was deleted"), 404, "session_ended", "has ended: it was deleted"),
    (SessionEnded("abc"), 404, "session_ended", "session abc has ended"),
    (SessionLost("r2-abc", "replica r2 is down"), 410, "session_lost", "lost: replica r2 is down"),
    (SessionBusy("abc"), 409, "busy", "is running code; wait or interrupt it"),
    (SessionStartFailed("abc", OSError("no bwrap")), 503, "session_failed", "no bwrap"),
    (CapacityExceeded(4), 429, "too_many_sessions", "at most 4 sessions"),
    (LimitTooHigh("wall_seconds", 60, 99), 400, "limit_too_high", "at most 60, got 99"),
    (NetworkNotAllowed(), 403, "network_not_allowed", "--allow-network"),
    (NetworkNotAllowed("'evil.com' is outside"), 403, "network_not_allowed", "'evil.com'"),
    (BadNetworkPolicy("network entry 'x y': bad"), 400, "bad_request", "'x y'"),
    (UnknownLanguage("cobol", ["python", "r"]), 400, "unknown_language", "known: python, r"),
    (LanguageUnavailable("r", "no R"), 400, "language_unavailable", "r is not available here"),
    (UnknownEnvironment("sci", ["bare"]), 400, "unknown_environment", "the environments are bare"),
    (EnvironmentBroken("sci", "no ipykernel"), 400, "environment_broken", "'sci' cannot be used"),
    (CheckpointUnknown("c1"), 404, "checkpoint_not_found", "no checkpoint 'c1'"),
    (CheckpointGone("c1"), 410, "checkpoint_gone", "its frozen process ended"),
    (TooManyCheckpoints(8), 429, "too_many_checkpoints", "keeps 8 checkpoints"),
    (CheckpointMemory(used=600, limit=1000), 413, "checkpoint_memory", "uses 600 bytes"),
    (ShuttingDown(), 503, "shutting_down", "the service is shutting down"),
    (ServiceUnavailable("the service is not running"), 503, "unavailable", "not running"),
    (InvalidRequest("limits: extra field"), 400, "bad_request", "limits: extra field"),
    (MalformedRequest("the body is not JSON"), 400, "malformed", "the body is not JSON"),
    (RequestTooLarge("request body", 10), 413, "too_large", "larger than 10 bytes"),
    (TokenRejected("invalid bearer token"), 401, "unauthorized", "invalid bearer token"),
    (OriginNotAllowed("https://evil.example"), 403, "forbidden", "is not allowed"),
    (HostNotAllowed("evil.example"), 403, "forbidden", "only loopback Host names"),
    (BadPath("../x", "'..' is not allowed"), 400, "bad_path", "'..' is not allowed"),
    (SessionFileNotFound("a.txt"), 404, "file_not_found", "no file 'a.txt' in the session"),
    (NotARegularFile("p", "a FIFO"), 400, "not_a_regular_file", "'p' is a FIFO: refused"),
    (PathIsDirectory("d"), 400, "is_a_directory", "'d' is a directory"),
    (PathRefused("l", "goes through a symbolic link"), 400, "unsafe_path", "symbolic link"),
    (DiskLimitExceeded("big"), 413, "too_large", "does not fit the session's disk limits"),
    (FileExists("d"), 409, "file_exists", "'d' already exists"),
    (DirectoryNotEmpty("d"), 409, "directory_not_empty", "'d' is a directory that is not empty"),
    (PathNotDirectory("f/x"), 400, "not_a_directory", "'f/x' is not a directory"),
    (ServiceError("refused"), 400, "bad_request", "refused"),
]


def _id(case: object) -> str:
    return type(case).__name__ if isinstance(case, ServiceError) else ""


@pytest.mark.parametrize(("exc", "status", "code", "words"), CASES, ids=_id)
def test_each_refusal_maps_to_its_status_and_code(
    exc: ServiceError, status: int, code: str, words: str
) -> None:
    assert problem_for(exc) == Problem(status, code, str(exc))
    assert words in exc.message and exc.message == str(exc)


def test_every_refusal_class_is_in_the_table() -> None:
    defined = {
        cls
        for module in (errors, refusals)
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, ServiceError)
    }
    assert defined == {type(exc) for exc, *_ in CASES}


def test_refusals_carry_their_data() -> None:
    assert SessionEnded("abc", "culled").reason == "culled"
    assert SessionBusy("abc").session_id == "abc"
    limit = LimitTooHigh("memory_bytes", 1, 2)
    assert (limit.name, limit.most, limit.asked) == ("memory_bytes", 1, 2)
    assert UnknownLanguage("x", ["a"]).known == ("a",)
    cause = OSError("boom")
    assert SessionStartFailed("abc", cause).error is cause
    assert RequestTooLarge("upload", 5).limit == 5
    assert NotARegularFile("p", "a socket").kind == "a socket"


def test_other_exceptions_keep_their_summaries() -> None:
    assert problem_for(MessageError("no role")) == Problem(
        400, "malformed", "the message is malformed: no role"
    )
    assert problem_for(FileNotFoundError(2, "No such file")) == Problem(
        404, "file_not_found", "no such file: No such file"
    )
    assert problem_for(RuntimeError("unforeseen")) is None


def test_refusals_are_rendered_as_json_with_their_status() -> None:
    app = FastAPI()
    install_handlers(app)

    @app.get("/{index}")
    async def refuse(index: int) -> None:
        raise CASES[index][0]

    with TestClient(app) as client:
        for index, (exc, status, code, _) in enumerate(CASES):
            response = client.get(f"/{index}")
            assert response.status_code == status, type(exc).__name__
            assert response.json() == {"error": {"code": code, "message": str(exc)}}
            if status == 401:
                assert response.headers["www-authenticate"] == "Bearer"
