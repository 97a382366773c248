"""Class 6, memory-backed folders: /tmp, /var/tmp and /dev/shm inside a sandbox
are tmpfs, which no disk limit counts; each must be capped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.service.server import Server, output

from .attacks import execute
from .harness import Account, serve_as

pytestmark = pytest.mark.timeout(300)

_LIMIT = 8 << 20


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    """The server under attack, shared by the module's tests on purpose: each test
    makes sessions of its own, and one server facing them all is the setting."""
    with serve_as(account, "--pool-size", "0", "--max-sessions", "2") as running:
        yield running


def test_memory_backed_folders_are_capped(server: Server) -> None:
    """Regression: /tmp and /var/tmp were tmpfs as large as the host's memory and
    /dev/shm sat on bwrap's /dev tmpfs (12 GB here), so a session whose disk was
    capped at 8 MiB could still fill the host's memory through them (nothing
    charged it under an unprivileged server)."""
    sid = server.create(languages=["python"], limits={"disk_bytes": _LIMIT})
    code = (
        "import os\n"
        "for folder in ('/tmp', '/var/tmp', '/dev/shm'):\n"
        "    written = 0\n"
        "    try:\n"
        "        with open(os.path.join(folder, 'fill'), 'wb') as f:\n"
        "            for _ in range(64):\n"
        "                f.write(b'x' * (1 << 20)); f.flush(); written += 1 << 20\n"
        "    except OSError as exc:\n"
        "        pass\n"
        "    os.remove(os.path.join(folder, 'fill'))\n"
        "    print(folder, written)\n"
    )
    text = output(execute(server, sid, "python", code))
    sizes = dict(line.split() for line in text.splitlines() if line.startswith("/"))
    assert set(sizes) == {"/tmp", "/var/tmp", "/dev/shm"}, text
    for folder, written in sizes.items():
        assert int(written) <= _LIMIT, f"{folder} took {written} bytes past {_LIMIT}"
    server.delete(sid)
