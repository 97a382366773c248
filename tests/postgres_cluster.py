"""A throwaway PostgreSQL cluster for tests, on Debian's PostgreSQL 15 binaries.

::

    with PostgresCluster() as cluster:          # initdb + start; stop + remove on exit
        url = cluster.url                       # postgresql://lmc@127.0.0.1:PORT/lmc
        other = cluster.create_database()       # a fresh, empty database: its URL
        mine = cluster.create_schema()          # a fresh schema (cheaper): a URL using it
        cluster.kill()                          # SIGKILL the server (a crash) ...
        cluster.start()                         # ... and start it again: crash recovery

The cluster lives in a temporary directory, listens on 127.0.0.1 on a free
port and on a unix socket in that directory, and trusts the superuser ``lmc``
without a password. initdb refuses to run as root, so as root the cluster
belongs to, and runs as, ``nobody``. It is a test cluster: fsync is off unless
``settings`` turn it on (a killed server loses nothing, a power cut would).

:meth:`PostgresCluster.unavailable` says why no cluster can be made here
(None when one can); :func:`session_cluster` is one cluster per pytest session,
started on first use, that skips the test with that reason.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO

import pytest

from .lifeline import tie

BIN = Path(os.environ.get("LMC_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
USER = "lmc"
DATABASE = "lmc"
#: Printed by the server once it accepts connections.
READY = "database system is ready to accept connections"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: Server settings of a test cluster (``settings=`` adds to them or overrides them).
_TEST_SETTINGS = {"fsync": "off", "full_page_writes": "off", "max_connections": "200"}


class PostgresCluster:
    """One PostgreSQL cluster of its own (see the module's text); ``timeout``
    bounds every wait for it (initdb, start, stop); ``settings`` are server
    settings (``{"fsync": "on"}`` for figures worth quoting)."""

    def __init__(self, *, timeout: float = 60.0, settings: Mapping[str, str] | None = None) -> None:
        self.timeout = timeout
        self.settings = {**_TEST_SETTINGS, **(settings or {})}
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="lmc-pg-"))
        self.data_dir = self.root / "data"
        self.url = self.url_of(DATABASE)
        self._process: subprocess.Popen[str] | None = None
        self._log: list[str] = []
        self._owner = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
        if self._owner is not None:
            os.chown(self.root, self._owner.pw_uid, self._owner.pw_gid)
        self._initdb()

    @staticmethod
    def unavailable() -> str | None:
        """Why no cluster can be made here, or None."""
        for name in ("initdb", "postgres"):
            if not (BIN / name).is_file():
                return f"PostgreSQL is not installed ({BIN / name} is missing)"
        try:
            import psycopg  # noqa: F401
        except ImportError:
            return "psycopg is not installed (pip install 'lmc-runtime[postgres]')"
        return None

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs."""
        return self._process.pid if self._process is not None else None

    def url_of(self, database: str) -> str:
        """The URL of ``database`` on this cluster."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def _as_owner(self, argv: list[str]) -> list[str]:
        if self._owner is None:
            return argv
        ids = [f"--reuid={self._owner.pw_uid}", f"--regid={self._owner.pw_gid}"]
        return ["setpriv", *ids, "--clear-groups", "--", *argv]

    def _initdb(self) -> None:
        argv = [str(BIN / "initdb"), "-D", str(self.data_dir), "-U", USER]
        argv += ["--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"]
        done = subprocess.run(
            self._as_owner(argv),
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
        if done.returncode != 0:
            shutil.rmtree(self.root, ignore_errors=True)
            raise RuntimeError(f"initdb failed: {done.stderr.strip()}")

    def start(self) -> PostgresCluster:
        """Start the server (again, after :meth:`stop` or :meth:`kill`); return
        once it accepts connections, with ``DATABASE`` there."""
        assert self._process is None, "the cluster is running"
        argv = [str(BIN / "postgres"), "-D", str(self.data_dir), "-p", str(self.port)]
        argv += ["-h", "127.0.0.1", "-k", str(self.root)]
        for name, value in self.settings.items():
            argv += ["-c", f"{name}={value}"]
        process = subprocess.Popen(
            self._as_owner(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its session ends with this process (tie)
        )
        tie(process)
        self._process = process
        ready = threading.Event()
        assert process.stderr is not None
        threading.Thread(target=self._read_log, args=(process.stderr, ready), daemon=True).start()
        if not ready.wait(self.timeout) or process.poll() is not None:
            self.kill()
            raise RuntimeError(f"PostgreSQL did not start: {self.log()}")
        self._ensure_database(DATABASE)
        return self

    def _read_log(self, stream: IO[str], ready: threading.Event) -> None:
        for line in stream:
            self._log.append(line)
            if READY in line:
                ready.set()
        ready.set()  # the server ended: whoever waits learns it at once

    def log(self) -> str:
        """What the server wrote (its log goes to stderr)."""
        return "".join(self._log[-200:])

    def _ensure_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url_of("postgres"), autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                return
            conn.execute(f'CREATE DATABASE "{name}"')

    def create_database(self, name: str | None = None) -> str:
        """A new, empty database (named ``name``, or a fresh name): its URL."""
        name = name or f"db_{uuid.uuid4().hex[:12]}"
        self._ensure_database(name)
        return self.url_of(name)

    def create_schema(self, name: str | None = None) -> str:
        """A new, empty schema in ``DATABASE`` (named ``name``, or a fresh name): the
        URL of a connection whose ``search_path`` starts with it, so that tables
        made without a schema land there. Far cheaper than a database."""
        import psycopg

        name = name or f"s_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{name}"')
        return f"{self.url}?options=-csearch_path%3D{name}"

    def stop(self) -> None:
        """Stop the server cleanly (a no-op when it is not running)."""
        self._end(signal.SIGINT)  # "fast" shutdown: disconnect clients, checkpoint

    def kill(self) -> None:
        """End the server as a crash would: SIGKILL to it and each of its processes."""
        process = self._process
        if process is None:
            return
        import psutil

        try:
            children = psutil.Process(process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        for child in children:
            # A child may end between the listing and the kill.
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        self._end(signal.SIGKILL)
        psutil.wait_procs(children, timeout=self.timeout)

    def _end(self, signum: int) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signum)
        try:
            process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=self.timeout)

    def remove(self) -> None:
        """Stop the server and remove the cluster's directory."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        try:
            return self.start()
        except BaseException:
            self.remove()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.remove()


_SESSION_CLUSTER = pytest.StashKey[PostgresCluster]()


def session_cluster(request: pytest.FixtureRequest) -> PostgresCluster:
    """The pytest session's cluster, started on first use and removed when the
    session ends; the test is skipped when no cluster can be made here."""
    stash = request.config.stash
    if _SESSION_CLUSTER not in stash:
        reason = PostgresCluster.unavailable()
        if reason is not None:
            pytest.skip(reason)
        cluster = PostgresCluster()
        request.config.add_cleanup(cluster.remove)
        stash[_SESSION_CLUSTER] = cluster.start()
    return stash[_SESSION_CLUSTER]
