"""What a start says about the session folders a killed predecessor left."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from lmc_runtime.sandbox import stale
from lmc_runtime.service.errors import SessionLost
from lmc_runtime.service.manager import SessionManager
from lmc_runtime.service.settings import ServiceSettings
from lmc_runtime.service.transcript import Transcripts
from lmc_runtime.store import JanThreadStore

pytestmark = pytest.mark.anyio

LEFT = "0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def data_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        yield Path(tmp)


async def test_a_failed_stale_cleanup_is_logged_as_a_failure_not_as_cleaned_up(
    data_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a start whose stale-session cleanup left files behind (folders
    the code had locked) logged "cleaned up 1 stale sessions"; it now logs an
    error naming what was left, and the session still answers as lost."""
    (data_dir / "sessions" / LEFT / "work" / "locked").mkdir(parents=True)
    monkeypatch.setattr(stale, "remove_tree", lambda root: ["work/locked: Permission denied"])
    settings = ServiceSettings(data_dir=data_dir, token="t", pool_size=0, sandbox=False)
    manager = SessionManager(settings, Transcripts(JanThreadStore(data_dir)))
    with caplog.at_level(logging.WARNING, logger="lmc_runtime"):
        async with anyio.create_task_group() as tg:
            await tg.start(manager.run)
            with pytest.raises(SessionLost):
                manager.get(LEFT)
            tg.cancel_scope.cancel()
    messages = [(record.levelno, record.getMessage()) for record in caplog.records]
    assert not any("cleaned up" in message for _, message in messages), messages
    assert (
        logging.ERROR,
        f"could not clean up the stale session {LEFT}; left: work/locked: Permission denied",
    ) in messages
