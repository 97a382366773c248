"""Session ids of replicas (``<replica>-<16 hex>``) and the 410 ``session_lost``
answer for sessions a replica lost when it restarted."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from lmc_runtime.errors import RemoteSessionEnded, RemoteSessionLost, RemoteSessionNotFound
from lmc_runtime.remote.problems import error_from, error_from_body
from lmc_runtime.service.errors import SessionLost, SessionNotFound
from lmc_runtime.service.manager import SessionManager
from lmc_runtime.service.problems import Problem, problem_for
from lmc_runtime.service.replicas import issued_by, new_session_id, replica_of
from lmc_runtime.service.settings import ServiceSettings
from lmc_runtime.service.transcript import Transcripts
from lmc_runtime.store import JanThreadStore


def _settings(data_dir: Path, **kwargs: object) -> ServiceSettings:
    return ServiceSettings(data_dir=data_dir, token="t", pool_size=0, **kwargs)  # type: ignore[arg-type]


def _manager(data_dir: Path, replica: str | None) -> SessionManager:
    settings = _settings(data_dir, replica=replica, sandbox=False)
    return SessionManager(settings, Transcripts(JanThreadStore(data_dir)))


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A short data directory (the socket-path budget refuses pytest's long ones)."""
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        yield Path(tmp)


def test_ids_carry_the_replica_and_plain_ids_stay_as_they_were() -> None:
    assert re.fullmatch(r"r1-[0-9a-f]{16}", new_session_id("r1"))
    assert re.fullmatch(r"lmc-0-[0-9a-f]{16}", new_session_id("lmc-0"))
    assert re.fullmatch(r"[0-9a-f]{16}", new_session_id(None))
    assert len({new_session_id("r1") for _ in range(100)}) == 100


def test_the_replica_is_what_comes_before_the_last_hex_part() -> None:
    assert replica_of("r1-0123456789abcdef") == "r1"
    assert replica_of("lmc-10-0123456789abcdef") == "lmc-10"
    assert replica_of("0123456789abcdef") is None
    assert replica_of("r1-0123456789abcde") is None  # 15 digits: no id of ours
    assert replica_of("r1-0123456789abcdef/x") is None
    # "lmc" and "lmc-0" are different replicas; neither claims the other's ids.
    assert issued_by("lmc-0-0123456789abcdef", "lmc-0")
    assert not issued_by("lmc-0-0123456789abcdef", "lmc")
    assert not issued_by("0123456789abcdef", None)


@pytest.mark.parametrize("bad", ["", "R1", "r_1", "-r1", "r1-", "r1.x", "a" * 33, "r1/x"])
def test_replica_names_that_cannot_be_ids_are_refused(bad: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="replica"):
        _settings(tmp_path, replica=bad)


def test_the_replica_name_counts_in_the_socket_path_budget(tmp_path: Path) -> None:
    """Regression: ids go into the sessions' folders, whose kernel sockets must
    fit 107 bytes; a data directory that fits plain ids can be too long for a
    replica's."""
    budget = 107 - len("/sessions/0123456789abcdef/runtime/javascript/kernel-10")
    data_dir = Path("/" + "d" * (budget - 3))  # 2 characters to spare
    assert _settings(data_dir, replica="r").replica == "r"  # "r-" takes them
    with pytest.raises(ValueError, match="1 characters too long"):
        _settings(Path(f"{data_dir}x"), replica="r")
    assert _settings(Path(f"{data_dir}x")).replica is None
    with pytest.raises(ValueError, match="31 characters too long"):
        _settings(data_dir, replica="r" * 32)


def test_an_unknown_id_of_this_replica_is_lost_and_others_are_not_found(data_dir: Path) -> None:
    manager = _manager(data_dir, "r2")
    with pytest.raises(SessionLost) as lost:
        manager.get("r2-0123456789abcdef")
    assert lost.value.reason == "replica r2 restarted since it was created"
    assert problem_for(lost.value) == Problem(
        410,
        "session_lost",
        "session r2-0123456789abcdef was lost: replica r2 restarted since it was created",
    )
    for other in ("r1-0123456789abcdef", "0123456789abcdef", "r2-nothex"):
        with pytest.raises(SessionNotFound):
            manager.get(other)


def test_a_server_that_is_no_replica_answers_unknown_ids_as_before(data_dir: Path) -> None:
    manager = _manager(data_dir, None)
    with pytest.raises(SessionNotFound) as missing:
        manager.get("0123456789abcdef")
    assert not isinstance(missing.value, SessionLost)
    assert problem_for(missing.value) == Problem(404, "not_found", "no session '0123456789abcdef'")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_sessions_left_by_a_server_that_died_are_lost_after_its_restart(
    data_dir: Path,
) -> None:
    """Regression: a restarted server (replica or not) answered 404 for the
    sessions it held when it died; they were lost, and say so."""
    left = "0123456789abcdef"
    (data_dir / "sessions" / left / "disk").mkdir(parents=True)
    manager = _manager(data_dir, None)
    async with anyio.create_task_group() as tg:
        await tg.start(manager.run)
        with pytest.raises(SessionLost, match="the server stopped without a shutdown"):
            manager.get(left)
        with pytest.raises(SessionNotFound):
            manager.get("fedcba9876543210")
        tg.cancel_scope.cancel()
    assert not (data_dir / "sessions" / left).exists()


def test_the_client_raises_session_lost_for_410() -> None:
    body = b'{"error": {"code": "session_lost", "message": "replica r2 is down"}}'
    error = error_from_body(410, body)
    assert type(error) is RemoteSessionLost
    assert (error.status, error.code, error.message) == (410, "session_lost", "replica r2 is down")
    # Code that catches "no such session" catches a lost one too.
    assert isinstance(error, RemoteSessionNotFound)
    assert not isinstance(error, RemoteSessionEnded)
    # A 410 whose body is not lmc serve's (a proxy's own page) is still a lost session.
    assert type(error_from_body(410, b"<html>Gone</html>")) is RemoteSessionLost
    assert type(error_from(404, "not_found", "no session")) is RemoteSessionNotFound
