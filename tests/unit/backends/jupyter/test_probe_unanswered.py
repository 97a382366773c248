"""A language's check that did not answer in time is made again the next time.

Regression: a backend keeps what its check found, and a server's sessions share
one backend per language since their registries are shared: one check slowed
past its bound (a loaded host) left R, or an environment's Python, unavailable
to every session until the server restarted."""

from __future__ import annotations

import sys

import pytest

from lmc_runtime.backends.jupyter import backend as jupyter_backend
from lmc_runtime.backends.jupyter.backend import JupyterBackend, probe


class _Checked(JupyterBackend):
    kernel_name = "lmc-python"

    def __init__(self) -> None:
        self.checks = 0
        self.slow = True

    def requirement(self) -> str | None:
        self.checks += 1
        if self.slow:
            return probe([sys.executable, "-c", "import time; time.sleep(30)"], "refused")
        return "missing"


def test_a_check_that_timed_out_is_made_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jupyter_backend, "_PROBE_BOUND", 0.2)
    backend = _Checked()
    first = backend.availability()
    assert not first.available and "did not answer" in str(first.reason)
    assert type(first.reason) is str
    backend.slow = False
    assert backend.availability().reason == "missing"
    assert backend.availability().reason == "missing"
    assert backend.checks == 2  # an answer is kept
