"""Node process helpers and the backend's availability, without starting node."""

from __future__ import annotations

import os
import signal

import pytest

from lmc_runtime.backends.base import Backend
from lmc_runtime.backends.node import NodeBackend
from lmc_runtime.backends.node.process import describe_exit, read_available
from lmc_runtime.backends.node.protocol import Output
from lmc_runtime.backends.node.routing import LateOutput


def test_exit_descriptions_name_the_signal_or_the_code() -> None:
    assert describe_exit(-signal.SIGKILL).startswith("node was killed by SIGKILL")
    assert describe_exit(-signal.SIGTERM) == "node was killed by SIGTERM"
    assert describe_exit(2) == "node exited with code 2"
    assert describe_exit(None) == "node ended"


def test_read_available_tells_empty_from_closed() -> None:
    r, w = os.pipe()
    os.set_blocking(r, False)
    try:
        assert read_available(r) == b""
        os.write(w, b"data")
        assert read_available(r) == b"data"
        os.close(w)
        assert read_available(r) is None
    finally:
        os.close(r)


def test_backend_satisfies_the_protocol_with_its_aliases() -> None:
    backend = NodeBackend()
    assert isinstance(backend, Backend)
    assert backend.name == "javascript"
    assert set(backend.aliases) == {"js", "node", "nodejs"}


def test_missing_node_is_reported_with_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    availability = NodeBackend().availability()
    assert not availability.available
    assert "node is not installed" in (availability.reason or "")
    assert "apt-get install nodejs" in (availability.reason or "")


def test_late_output_is_tagged_bounded_and_emptied_by_take() -> None:
    late = LateOutput()
    late.keep(Output("stdout", "before any request"))
    assert late.take() == ([], 0)
    late.tag = "m1"
    late.keep(Output("stderr", "x"))
    late.keep(Output("stdout", "y" * 100_000))
    assert late.take() == ([("m1", "stderr", "x")], 100_000)
    assert late.take() == ([], 0)
