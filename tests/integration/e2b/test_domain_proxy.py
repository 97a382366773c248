"""E2B's SDKs, new and old, with ``E2B_DOMAIN`` alone, through nginx with TLS
(``examples/deploy/nginx-e2b.conf`` as shipped, its names and ports filled in)
in front of ``lmc serve --e2b-domain``: the control plane at ``api.<domain>``,
a sandbox at ``<port>-<id>.<domain>``, by host name through the proxy.

No DNS here knows the test's domain: the SDKs are given an HTTP proxy (their
``proxy`` option) that tunnels every ``CONNECT`` to nginx's port, so TLS (with
the host name as SNI, checked against a wildcard certificate of a CA trusted by
``SSL_CERT_FILE``) and the Host header are the SDK's own, end to end.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.e2b.conftest import E2B_TOKEN
from tests.integration.e2b.sdk_env import old_sdk_python
from tests.integration.service.server import Server, free_port, running_server
from tests.lifeline import tie

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        shutil.which("nginx") is None or shutil.which("openssl") is None,
        reason="needs nginx and openssl (lmc setup installs nginx-light)",
    ),
]

DOMAIN = "lmc.test"
CONFIG = Path(__file__).parents[3] / "examples" / "deploy" / "nginx-e2b.conf"

#: What the SDK does through the proxy; prints one JSON line of what it saw.
SCRIPT = """
import json, sys
from e2b_code_interpreter import Sandbox
proxy = sys.argv[1]
sbx = Sandbox.create(timeout=120, proxy=proxy)
try:
    seen = {
        "domain": sbx.sandbox_domain,
        "running": sbx.is_running(),
        "listed": sbx.sandbox_id in [s.sandbox_id for s in Sandbox.list(proxy=proxy).next_items()],
        "code": sbx.run_code("6 * 7").text,
        "echo": sbx.commands.run("echo through-the-proxy").stdout.strip(),
    }
    sbx.files.write("hello.txt", "over TLS")
    seen["file"] = sbx.files.read("hello.txt")
finally:
    sbx.kill()
print(json.dumps(seen))
"""


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _certificates(where: Path) -> None:
    """A CA (ca.crt) and a certificate of it for DOMAIN and *.DOMAIN (tls.crt, tls.key)."""
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=lmc test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=where,
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr",
        "-subj", f"/CN={DOMAIN}",
        cwd=where,
    )  # fmt: skip
    (where / "ext.cnf").write_text(
        f"subjectAltName=DNS:{DOMAIN},DNS:*.{DOMAIN}\n"
        "basicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "tls.crt", "-days", "2", "-extfile", "ext.cnf",
        cwd=where,
    )  # fmt: skip


def _config(where: Path, upstream: int, tls: int, plain: int) -> Path:
    """The shipped config with this test's names, files and ports."""
    text = CONFIG.read_text()
    text = text.replace("e2b.example.com", DOMAIN)
    text = text.replace("/etc/lmc/tls/e2b.crt", str(where / "tls.crt"))
    text = text.replace("/etc/lmc/tls/e2b.key", str(where / "tls.key"))
    text = text.replace("127.0.0.1:8765", f"127.0.0.1:{upstream}")
    text = text.replace("listen 443 ", f"listen 127.0.0.1:{tls} ")
    text = text.replace("listen 80;", f"listen 127.0.0.1:{plain};")
    lines = [line for line in text.splitlines() if "[::]" not in line]
    path = where / "nginx.conf"
    path.write_text("\n".join(lines) + "\n")
    return path


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, f"nginx exited: {log.read_text(errors='replace')}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "nginx did not listen in 30 s"
            time.sleep(0.1)


class Tunnel:
    """An HTTP proxy that answers every CONNECT by a tunnel to one local port,
    and remembers the host names asked for."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.asked: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                piece = client.recv(4096)
                if not piece or len(head) > 65536:
                    return
                head += piece
            request, _, rest = head.partition(b"\r\n\r\n")
            method, target = request.split(b" ")[:2]
            if method != b"CONNECT":
                client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                return
            self.asked.append(target.decode())
            with socket.create_connection(("127.0.0.1", self.target), timeout=30) as upstream:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                upstream.sendall(rest)
                pump = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
                pump.start()
                _pipe(client, upstream)
                pump.join(60)

    def close(self) -> None:
        self.listener.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    source.settimeout(120)
    try:
        while piece := source.recv(65536):
            sink.sendall(piece)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Tunnel, Path]]:
    where = tmp_path_factory.mktemp("nginx")
    _certificates(where)
    with running_server("--pool-size", "1", "--e2b-domain", DOMAIN, token=E2B_TOKEN) as server:
        tls, plain = free_port(), free_port()
        config = _config(where, server.port, tls, plain)
        log = where / "error.log"
        argv = ["nginx", "-c", str(config), "-p", str(where), "-e", str(log)]
        argv += ["-g", f"daemon off; pid {where / 'nginx.pid'};"]
        nginx = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
        tie(nginx)  # its master and workers end with this process, however it ends
        try:
            _wait_for_port(tls, nginx, log)
            tunnel = Tunnel(tls)
            try:
                yield server, tunnel, where / "ca.crt"
            finally:
                tunnel.close()
        finally:
            nginx.terminate()
            nginx.wait(timeout=30)


def _sdk(python: str, tunnel: Tunnel, ca: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("E2B_")}
    env.update(E2B_DOMAIN=DOMAIN, E2B_API_KEY=E2B_TOKEN, SSL_CERT_FILE=str(ca))
    env.pop("HTTPS_PROXY", None)
    env.pop("https_proxy", None)
    done = subprocess.run(
        [python, "-c", SCRIPT, f"http://127.0.0.1:{tunnel.port}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("python", ["new", "old"])
def test_the_sdk_with_e2b_domain_goes_through_a_tls_proxy(
    proxied: tuple[Server, Tunnel, Path], python: str
) -> None:
    server, tunnel, ca = proxied
    executable = sys.executable if python == "new" else str(old_sdk_python())
    tunnel.asked.clear()
    seen = _sdk(executable, tunnel, ca)
    assert seen == {
        "domain": DOMAIN,
        "running": True,
        "listed": True,
        "code": "42",
        "echo": "through-the-proxy",
        "file": "over TLS",
    }
    asked = set(tunnel.asked)
    assert f"api.{DOMAIN}:443" in asked
    sandbox_hosts = {a for a in asked if a.startswith(("49983-", "49999-"))}
    assert {h.split("-", 1)[0] for h in sandbox_hosts} == {"49983", "49999"}
    assert all(h.endswith(f".{DOMAIN}:443") for h in sandbox_hosts)
    # Whole sandbox ids stay out of the server's log, behind the proxy too.
    ids = {h.split("-", 1)[1].split(".", 1)[0] for h in sandbox_hosts}
    log = server.log()
    assert ids and not any(i in log for i in ids)
