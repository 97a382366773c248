"""The contract's fixtures, with Linux's ``/proc`` and pidfds forced off.

``LMC_RUNTIME_PORTABLE=1`` makes the runtime take the paths it takes where
Linux's are missing (macOS): a worker thread waits for each exit, psutil lists
processes, and no stdin FIFO is answered from ``/proc``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmc_runtime.backends.core.procs import PORTABLE, linux_procfs

from ..contract.conftest import (  # noqa: F401  (fixtures and the hook, used by name)
    computer,
    lang,
    make_computer,
    pytest_pyfunc_call,
)


@pytest.fixture(autouse=True)
def portable(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(PORTABLE, "1")
    assert not linux_procfs()
    yield


@pytest.fixture
def side() -> str:
    """The portable paths are the in-process Computer's: only its side runs here."""
    return "local"
