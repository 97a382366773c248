"""Attacks on a session's fork: its code plants links, FIFOs and sockets in its
working directory, pointing at the host's files, before asking for a fork. The
host copies the working directory itself (:mod:`lmc_runtime.sandbox.fileops`):
it must follow none of them, stall on none, and the fork must hold none of the
host's content. Run against a real ``lmc serve`` with bubblewrap, as root and
as an unprivileged user."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.service.server import Server, output

from .attacks import execute
from .harness import Account, serve_as

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    with serve_as(account, "--pool-size", "0", "--max-sessions", "4") as running:
        yield running


@pytest.fixture
def host_secret() -> Iterator[Path]:
    """A host file the server could read (root's, or world-readable) but the
    sandbox cannot see."""
    with tempfile.TemporaryDirectory(prefix="lmc-secret-") as folder:
        os.chmod(folder, 0o755)
        secret = Path(folder) / "secret.txt"
        secret.write_text("host secret " + secrets.token_hex(8))
        os.chmod(secret, 0o644)
        yield secret


PLANT = """
import os, socket
os.symlink({secret!r}, 'leak.txt')
os.symlink({folder!r}, 'leak_dir')
os.symlink('/etc', 'etc_link')
os.mkfifo('pipe')
s = socket.socket(socket.AF_UNIX)
s.bind('sock')
os.makedirs('real/inner')
open('real/inner/ok.txt', 'w').write('kept')
print('planted')
"""


def test_fork_copies_no_link_fifo_or_socket_of_the_host(server: Server, host_secret: Path) -> None:
    parent = server.create()
    child = ""
    try:
        code = PLANT.format(secret=str(host_secret), folder=str(host_secret.parent))
        assert "planted" in output(execute(server, parent, "python", code))
        with server.client() as client:
            forked = client.post(f"/v1/sessions/{parent}/fork")
            assert forked.status_code == 201, forked.text
            child = forked.json()["id"]
        listing = output(
            execute(
                server,
                child,
                "python",
                "import os\nprint(sorted(os.listdir('.')), open('real/inner/ok.txt').read())",
            )
        )
        names = listing.split("]")[0]
        for planted in ("leak.txt", "leak_dir", "etc_link", "pipe", "sock"):
            assert f"'{planted}'" not in names, listing
        assert "kept" in listing
        secret = host_secret.read_text()
        for path in Path(server.data_dir).rglob("*"):
            if path.is_file() and not path.is_symlink():
                try:
                    assert secret not in path.read_text(errors="ignore"), path
                except OSError:
                    continue
    finally:
        server.delete(parent)
        if child:
            server.delete(child)
