"""``lmc serve --store``: a session's transcript goes to PostgreSQL, and a store
that is unknown or cannot be reached stops the start in one line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from lmc_runtime.sandbox import sandbox_available
from lmc_runtime.store import PostgresThreadStore

from ...postgres_cluster import free_port
from ..service.server import TOKEN, output, running_server

pytestmark = pytest.mark.integration

SERVE = (sys.executable, "-m", "lmc_runtime", "serve", "--port", "0", "--pool-size", "0")


def test_a_sessions_code_and_replies_land_in_postgres(fresh_url: str) -> None:
    availability = sandbox_available()
    assert availability.available, f"lmc serve needs bubblewrap: {availability.reason}"
    args = ("--pool-size", "0", "--max-sessions", "2", "--store", fresh_url)
    with running_server(*args) as server:
        session_id = server.create(title="in postgres")
        replies = server.execute(session_id, "print(6 * 7)")
        assert output(replies) == "42\n"
        assert not (server.data_dir / "threads" / session_id).exists()  # not in the Jan folder
    store = PostgresThreadStore(fresh_url)
    try:
        assert store.get(session_id).title == "in postgres"
        kept = store.messages(session_id)
    finally:
        store.close()
    code = kept[0]
    assert (code.role, code.type, code.content) == ("assistant", "code", "print(6 * 7)")
    said = [m.content for m in kept if m.type == "console" and m.format == "output"]
    assert "".join(said) == "42\n"
    finals = [m for m in kept if m.format == "active_line" and m.content is None]
    assert finals and all(m.conversation_id == session_id for m in kept)


def _refused(*args: str) -> str:
    """Run ``lmc serve args``, which must not start: its one line on stderr."""
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        done = subprocess.run(
            [*SERVE, "--no-sandbox", "--data-dir", f"{tmp}/data", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "LMC_TOKEN": TOKEN},
            check=False,
        )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "listening" not in done.stdout and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lmc serve: --store: "), done.stderr
    return lines[0]


def test_an_unknown_store_is_one_line_and_exit_2() -> None:
    line = _refused("--store", "bogus://user:pw@x")
    assert "unknown thread store 'bogus://...'" in line and "pw" not in line


def test_an_unreachable_postgres_store_is_one_line_and_exit_2() -> None:
    port = free_port()
    line = _refused("--store", f"postgresql://lmc:s3cret@127.0.0.1:{port}/lmc")
    assert f"cannot open the thread database postgresql://lmc@127.0.0.1:{port}/lmc" in line
    assert "s3cret" not in line
