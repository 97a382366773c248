"""A real ``lmc serve`` subprocess on a free loopback port, for the service tests."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx

from ...lifeline import tie

TOKEN = "test-token-0123456789"
CODE = {"role": "assistant", "type": "code", "format": "python"}


#: What ``lmc serve`` prints once it listens (``--port 0``: the port the kernel chose).
_ANNOUNCED = re.compile(rb"lmc serve: listening on http://127\.0\.0\.1:(\d+)\n")


def free_port() -> int:
    """A port free now; another process may take it before it is bound (a server
    that can, is started on port 0 and says which port it got)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """One running ``lmc serve`` and clients for it.

    Its stdout and stderr are read as they come, into :meth:`log` (the last
    MiB): a pipe nobody reads fills up and blocks the server at its next line.
    """

    def __init__(self, process: subprocess.Popen[bytes], port: int, data_dir: Path) -> None:
        self.process = process
        self.data_dir = data_dir
        self._at(port)
        self._output = bytearray()
        #: Set once the server printed the port it listens on, or its output ended.
        self._announced = threading.Event()
        self._readers = [
            threading.Thread(target=self._drain, args=(stream,), daemon=True)
            for stream in (process.stdout, process.stderr)
            if stream is not None
        ]
        for reader in self._readers:
            reader.start()

    def _at(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.ws_url = f"ws://127.0.0.1:{port}"

    def _drain(self, stream: IO[bytes]) -> None:
        with contextlib.suppress(OSError, ValueError):
            while piece := stream.read1(65536):  # type: ignore[attr-defined]
                self._output += piece
                if not self._announced.is_set() and _ANNOUNCED.search(self._output):
                    self._announced.set()
                del self._output[: max(0, len(self._output) - (1 << 20))]
        self._announced.set()

    def listening_port(self, timeout: float) -> int | None:
        """The port ``lmc serve --port 0`` said it listens on (a bounded wait);
        None if it ended, or said nothing, first."""
        self._announced.wait(timeout)
        found = _ANNOUNCED.search(self._output)
        return int(found.group(1)) if found else None

    def log(self, wait: float = 0) -> str:
        """What the server printed; ``wait``: at most that long for it to end."""
        for reader in self._readers:
            reader.join(wait)
        return self._output.decode(errors="replace")

    def client(self, token: str | None = TOKEN) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def create(self, **body: Any) -> str:
        with self.client() as client:
            response = client.post("/v1/sessions", json=body)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def delete(self, session_id: str) -> None:
        with self.client() as client:
            client.delete(f"/v1/sessions/{session_id}")

    def execute(
        self, session_id: str, code: str, *, language: str = "python", **params: Any
    ) -> list[dict[str, Any]]:
        """The messages of running ``code`` in ``language``; ``params``: the query's."""
        body = {**CODE, "format": language, "content": code}
        with self.client() as client:
            response = client.post(f"/v1/sessions/{session_id}/execute", json=body, params=params)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/x-ndjson")
        return [json.loads(line) for line in response.text.splitlines() if line]


def output(messages: list[dict[str, Any]]) -> str:
    return "".join(m["content"] for m in messages if m.get("format") == "output")


def final_status(messages: list[dict[str, Any]]) -> Any:
    last = messages[-1]
    assert last["format"] == "active_line" and last["content"] is None, last
    return (last.get("extras") or {}).get("status")


@contextmanager
def running_server(
    *args: str,
    token: str | None = TOKEN,
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
    prefix: list[str] | None = None,
) -> Iterator[Server]:
    """Start ``lmc serve`` with ``args`` (and ``env`` added to its environment,
    ``pass_fds`` left open in it, run through the command ``prefix``); wait
    (bounded) for /healthz; stop it after.

    The data directory is short (kernels' unix socket paths live inside it).
    """
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)  # sandboxes run as host uids of their own: let them pass
        with _running(
            Path(tmp) / "data", args, token, prefix, env=env, pass_fds=pass_fds
        ) as server:
            yield server


@contextmanager
def _running(
    data_dir: Path,
    args: tuple[str, ...],
    token: str | None,
    prefix: list[str] | None = None,
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> Iterator[Server]:
    # Port 0: the kernel picks a free port and the server prints it. A port picked
    # here could be taken by another test's server (pytest -n) before it is bound.
    argv = [*(prefix or []), sys.executable, "-m", "lmc_runtime", "serve", "--port", "0"]
    argv += ["--data-dir", str(data_dir), *args]
    environ = {k: v for k, v in os.environ.items() if k != "LMC_TOKEN"}
    environ.update(env or {})
    if token:
        environ["LMC_TOKEN"] = token
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
        pass_fds=pass_fds,
        start_new_session=True,  # its session ends with this process (tie)
    )
    tie(process)
    server = Server(process, 0, data_dir)
    try:
        deadline = time.monotonic() + 60
        port = server.listening_port(60)
        if port is None:
            raise AssertionError(f"lmc serve did not say where it listens: {server.log(wait=10)!r}")
        server._at(port)
        while True:
            if process.poll() is not None:
                raise AssertionError(f"lmc serve exited: {server.log(wait=10)!r}")
            try:
                if httpx.get(server.url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "lmc serve did not answer /healthz in 60 s"
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        server.log(wait=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def wait_for_pool(server: Server, ready: int = 1) -> None:
    """Wait (bounded) until the pool holds ``ready`` warm sessions."""
    deadline = time.monotonic() + 60
    while httpx.get(server.url + "/healthz", timeout=5).json()["pool_ready"] < ready:
        assert time.monotonic() < deadline, "the pool did not fill in 60 s"
        time.sleep(0.1)
