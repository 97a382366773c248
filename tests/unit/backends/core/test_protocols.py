"""The fake is what the core expects, so the tests here drive the real core."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime.backends.base import Backend, Session
from lmc_runtime.backends.core import Interpreter, SupervisedSession

from ....fakes import FakeBackend
from .harness import started


def test_the_fake_backend_is_a_backend_and_its_interpreter_an_interpreter(tmp_path: Path) -> None:
    backend = FakeBackend()
    assert isinstance(backend, Backend)
    assert isinstance(backend.interpreter(None, {}), Interpreter)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_started_session_is_a_supervised_session(tmp_path: Path) -> None:
    async with started(tmp_path) as h:
        assert isinstance(h.session, SupervisedSession) and isinstance(h.session, Session)
        assert h.fake.launched and (tmp_path / "work").is_dir()
