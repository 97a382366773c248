"""The contract's fixtures, with Linux's ``/proc`` and pidfds forced off.

``LMC_RUNTIME_PORTABLE=1`` makes the runtime take the paths it takes where
Linux's are missing (macOS): a worker thread waits for each exit, psutil lists
processes, and no stdin FIFO is answered from ``/proc``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmc_runtime.procs import PORTABLE, linux_procfs

from ..contract.conftest import (  # noqa: F401  (fixtures and the hook, used by name)
    available_profile,
    computer,
    make_computer,
    pytest_pyfunc_call,
)
from ..contract.languages import Profile

#: One language of each kind of process the runtime handles: a Jupyter kernel, a
#: shell on a PTY, node and the JVM. The portable paths are the core's and each
#: kind's (R takes Python's Jupyter path, sh and zsh bash's, TypeScript node's),
#: so running the others again would repeat the same paths at twice the cost.
PORTABLE_LANGUAGES = ("python", "shell", "javascript", "java")


@pytest.fixture(params=PORTABLE_LANGUAGES)
def lang(request: pytest.FixtureRequest) -> Profile:
    """The profile of one language of each kind; skipped when it cannot run here."""
    return available_profile(request.param)


@pytest.fixture(autouse=True)
def portable(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(PORTABLE, "1")
    assert not linux_procfs()
    yield


@pytest.fixture
def side() -> str:
    """The portable paths are the in-process Computer's: only its side runs here."""
    return "local"
