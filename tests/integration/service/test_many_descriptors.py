"""Regression: a server whose descriptors are numbered past 1024 (a burst of
100 sessions gets there) still runs, stops and closes sessions. ``select(2)``
stops at 1024: closing a forked Python kernel raised ValueError ("filedescriptor
out of range in select()", logged as "closing the python session failed") and
a shell's stop ladder misread its terminal. Here the server starts with 1,100
descriptors already open, so each one it opens is numbered past them."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

from .server import Server, final_status, output, running_server

HELD = 1100


@pytest.fixture(scope="module")
def crowded() -> Iterator[Server]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = HELD + 4096
    if soft != resource.RLIM_INFINITY and soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip(f"the descriptor limit ({hard}) is below {want}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    null = os.open(os.devnull, os.O_RDONLY)
    held = [os.dup(null) for _ in range(HELD)]
    os.close(null)
    try:
        with running_server("--pool-size", "0", pass_fds=tuple(held)) as server:
            yield server
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_python_runs_stops_and_closes_past_1024_descriptors(crowded: Server) -> None:
    session = crowded.create(languages=["python"])
    assert output(crowded.execute(session, "x = 41\nprint(x + 1)")) == "42\n"
    stopped = crowded.execute(session, "import time\ntime.sleep(60)", timeout=1)
    assert final_status(stopped) == "timeout"
    assert output(crowded.execute(session, "print(x)")) == "41\n"
    crowded.delete(session)
    log = crowded.log()
    assert "out of range" not in log and "closing the python session failed" not in log, log


def test_a_shell_runs_and_stops_past_1024_descriptors(crowded: Server) -> None:
    session = crowded.create(languages=["shell"])
    lines = output(crowded.execute(session, "seq 1 3000", language="shell")).split()
    assert lines == [str(n) for n in range(1, 3001)]
    stopped = crowded.execute(session, "sleep 60", language="shell", timeout=1)
    assert final_status(stopped) == "timeout"
    assert output(crowded.execute(session, "echo again", language="shell")) == "again\n"
    crowded.delete(session)
    assert "Traceback" not in crowded.log()


def test_the_server_lifts_a_low_open_file_limit() -> None:
    """A host that starts processes at 1,024 open files would cap the server at
    a few dozen sessions: ``lmc serve`` lifts its soft limit towards the hard one."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1024:
        pytest.skip(f"the hard descriptor limit is {hard}")
    ceiling = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    with running_server(
        "--pool-size", "0", prefix=["prlimit", f"--nofile=1024:{ceiling}", "--"]
    ) as server:
        limits = Path(f"/proc/{server.process.pid}/limits").read_text()
    row = next(line for line in limits.splitlines() if line.startswith("Max open files"))
    soft = int(row.split()[3])
    assert soft == min(65536, hard if hard != resource.RLIM_INFINITY else 65536), row
