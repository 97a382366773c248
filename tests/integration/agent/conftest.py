"""The scripted chat server, started on loopback for each test."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .scripted import ScriptedServer

ServerFactory = Callable[..., ScriptedServer]


@pytest.fixture
def scripted_server() -> Iterator[ServerFactory]:
    started: list[tuple[ScriptedServer, threading.Thread]] = []

    def start(script: list[dict[str, Any]], *, split: bool = False) -> ScriptedServer:
        server = ScriptedServer(script, split=split)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        started.append((server, thread))
        return server

    yield start
    for server, thread in started:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)
