"""The sessions of one server share their languages' backends (one registry per
Python), so each interpreter's check runs once a server.

Regression: each session's Computer built a registry of its own, and the first
run of a language checked it again: for R, ``R -e 'library(IRkernel)'`` (some
170 ms), for an environment's Python, ``python -c 'import ipykernel'``; both on
the event loop, every other session's output held up meanwhile."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from lmc_runtime.backends import r as r_backend
from lmc_runtime.service.manager import SessionManager
from lmc_runtime.service.pools import default_policy
from lmc_runtime.service.session import ServiceSession
from lmc_runtime.service.settings import ServiceSettings
from lmc_runtime.service.transcript import Transcripts
from lmc_runtime.store import JanThreadStore


@pytest.fixture
def manager() -> Iterator[SessionManager]:
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        settings = ServiceSettings(data_dir=Path(tmp), token="t", pool_size=0, sandbox=False)  # type: ignore[call-arg]
        yield SessionManager(settings, Transcripts(JanThreadStore(Path(tmp))))


def _new(manager: SessionManager, policy: Any, language: str) -> ServiceSession:
    """A session as the manager makes one (not started: nothing runs)."""

    async def made() -> ServiceSession:
        return manager._new(policy, [language], pooled=False)

    return anyio.run(made)


def _registry(session: ServiceSession) -> object:
    return session._kernels().get("registry")


def test_sessions_of_one_python_share_one_check(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    probes: list[list[str]] = []

    def counted(argv: list[str], failure: str) -> None:
        probes.append(list(argv))

    monkeypatch.setattr(r_backend, "probe", counted)
    monkeypatch.setattr(r_backend.RBackend, "program", lambda self: "/usr/bin/R")
    policy = default_policy(manager.settings)
    first, second = (_new(manager, policy, "r") for _ in range(2))
    shared = _registry(first)
    assert shared is not None and shared is _registry(second)
    for session in (first, second):
        assert session._kernels()["registry"].availability("r").available
    assert len(probes) == 1


def test_an_environments_python_has_a_registry_of_its_own(manager: SessionManager) -> None:
    policy = default_policy(manager.settings)
    other = dataclasses.replace(policy, environment=SimpleNamespace(python=Path("/opt/env/python")))
    plain = _registry(_new(manager, policy, "python"))
    env_one = _registry(_new(manager, other, "python"))
    env_two = _registry(_new(manager, other, "python"))
    assert env_one is env_two and env_one is not plain
