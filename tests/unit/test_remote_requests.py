"""The requests a RemoteComputer makes to open and close a session, against a
recording HTTP server: the creation's answer is the session's information, so no
``GET /v1/sessions/{id}`` follows it (a round trip in every session's start)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lmc_runtime.remote import RemoteComputer

_SESSION = {"id": "s1", "languages": ["python"], "status": "idle"}


class _Recorder(BaseHTTPRequestHandler):
    seen: list[str]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self, status: int, body: object | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.seen.append(f"{self.command} {self.path}")
        if (self.command, self.path) == ("POST", "/v1/sessions"):
            self._answer(201, _SESSION)
        elif (self.command, self.path) == ("GET", "/v1/sessions/s1"):
            self._answer(200, {**_SESSION, "usage": {}})
        elif (self.command, self.path) == ("GET", "/v1/languages"):
            self._answer(200, {"languages": [{"name": "python", "aliases": []}]})
        elif (self.command, self.path) == ("DELETE", "/v1/sessions/s1"):
            self._answer(204)
        else:
            self._answer(404, {"error": {"code": "not_found", "message": self.path}})

    do_GET = do_POST = do_DELETE = _route


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_regression_a_new_session_is_not_fetched_again_after_its_creation(
    recorder: tuple[str, list[str]],
) -> None:
    url, seen = recorder
    with RemoteComputer(url, token="t" * 24) as computer:
        assert computer.info["id"] == "s1"
        assert computer.resolve("python") == "python"
    assert seen == ["POST /v1/sessions", "GET /v1/languages", "DELETE /v1/sessions/s1"]


def test_a_session_attached_to_by_its_id_is_fetched(recorder: tuple[str, list[str]]) -> None:
    url, seen = recorder
    with RemoteComputer.attach(url, "s1", token="t" * 24) as computer:
        assert computer.info["usage"] == {}
    assert seen == ["GET /v1/sessions/s1", "GET /v1/languages"]
