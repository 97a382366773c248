"""``lmc serve`` replicas behind HAProxy, configured by ``examples/deploy/haproxy.cfg``.

::

    with running_cluster(["r1", "r2", "r3"], "--pool-size", "0") as cluster:
        cluster.url                         # the balancer
        cluster.replica("r2").kill()        # SIGKILL
        cluster.wait_states("sessions", r2="DOWN")  # HAProxy saw it
        cluster.replica("r2").start()       # same name, port and data directory

Each replica has a port and a data directory of its own, kept across restarts
(``store``: a ``--store`` URL they share instead of their Jan folders). The
balancer's figures (``/stats;csv``) say what HAProxy thinks of each replica.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from lmc_runtime.store import JanThreadStore, ThreadStore

from ...lifeline import tie
from ..service.server import TOKEN, Server, free_port

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "examples" / "deploy" / "haproxy.cfg"
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
#: How long a start, a stop or a change of state seen by HAProxy may take.
GUARD = 60.0


def _wait(what: str, ready: Callable[[], bool], timeout: float = GUARD) -> None:
    """Wait (bounded) until ``ready()``: it reads the observable state each time."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes], sig: int) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


class Replica:
    """One ``lmc serve --replica NAME``: started, killed and started again in place."""

    def __init__(self, name: str, root: Path, args: tuple[str, ...], store: str | None) -> None:
        self.name = name
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.data_dir = root / name
        self.args = args
        self.store = store
        self.server: Server | None = None

    def start(self) -> Server:
        """Start it and wait (bounded) until it answers ``/healthz``."""
        self.launch()
        return self.wait_ready()

    def launch(self) -> None:
        """Start it (:meth:`wait_ready` waits for it)."""
        assert self.server is None or self.server.process.poll() is not None, "still running"
        argv = [sys.executable, "-m", "lmc_runtime", "serve", "--replica", self.name]
        argv += ["--port", str(self.port), "--data-dir", str(self.data_dir), *self.args]
        if self.store:
            argv += ["--store", self.store]
        env = {**os.environ, "LMC_TOKEN": TOKEN}
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its session ends with this process (tie)
        )
        tie(process)
        self.server = Server(process, self.port, self.data_dir)

    def wait_ready(self) -> Server:
        """Wait (bounded) until it answers ``/healthz``."""
        server = self.server
        assert server is not None

        def answers() -> bool:
            if server.process.poll() is not None:
                raise AssertionError(f"replica {self.name} exited: {server.log(wait=10)!r}")
            try:
                return httpx.get(server.url + "/healthz", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        _wait(f"replica {self.name} answering /healthz", answers)
        return server

    def kill(self) -> None:
        """SIGKILL: the replica dies without a shutdown, as in a crash."""
        assert self.server is not None
        self.server.process.kill()
        self.server.process.wait(timeout=GUARD)

    def stop(self) -> None:
        if self.server is not None:
            _stop(self.server.process, signal.SIGTERM)
            self.server.log(wait=10)

    @contextmanager
    def transcripts(self) -> Iterator[ThreadStore]:
        """The store its transcripts are in (read beside the running replica)."""
        store: ThreadStore
        if self.store:
            from lmc_runtime.store.postgres import PostgresThreadStore

            store = PostgresThreadStore(self.store, pool_size=1)
        else:
            store = JanThreadStore(self.data_dir)
        try:
            yield store
        finally:
            store.close()

    def session_ids(self) -> set[str]:
        """The sessions it holds, asked directly (not through the balancer)."""
        assert self.server is not None
        with self.server.client() as client:
            listed = client.get("/v1/sessions").json()["sessions"]
        return {s["id"] for s in listed}


class Cluster:
    """Replicas and the HAProxy in front of them."""

    def __init__(self, replicas: list[Replica]) -> None:
        self.replicas = replicas
        self.port = free_port()
        self.stats_port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def replica(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)

    def environment(self) -> dict[str, str]:
        """The variables ``haproxy.cfg`` reads."""
        env = {
            "LMC_BALANCER_BIND": f"127.0.0.1:{self.port}",
            "LMC_BALANCER_STATS_BIND": f"127.0.0.1:{self.stats_port}",
        }
        for index, replica in enumerate(self.replicas, 1):
            env[f"LMC_REPLICA_{index}"] = replica.name
            env[f"LMC_REPLICA_{index}_ADDR"] = replica.address
        return env

    def start_balancer(self) -> None:
        """Start HAProxy on the config and wait until every replica is UP in it."""
        env = {**os.environ, **self.environment()}
        argv = [HAPROXY, "-db", "-f", str(CONFIG)]
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        tie(self.process)
        self.balancer_log = Server(self.process, self.port, CONFIG.parent)  # drains its log
        for backend in ("replicas", "sessions"):
            self.wait_states(backend, **{r.name: "UP" for r in self.replicas})

    def states(self, backend: str) -> dict[str, str]:
        """What HAProxy's health checks in ``backend`` say of each replica (``UP``,
        ``DOWN``...): ``replicas`` (whether it gets new sessions) or ``sessions``
        (whether its process is there)."""
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"haproxy exited: {self.balancer_log.log(wait=10)!r}")
        try:
            text = httpx.get(f"http://127.0.0.1:{self.stats_port}/stats;csv", timeout=5).text
        except httpx.TransportError:
            return {}
        rows = csv.DictReader(io.StringIO(text.lstrip("# ")))
        return {
            row["svname"]: row["status"].split()[0]
            for row in rows
            if row["pxname"] == backend and row["svname"] not in ("FRONTEND", "BACKEND")
        }

    def wait_states(self, backend: str, **expected: str) -> None:
        """Wait (bounded) until HAProxy sees each named replica in its state."""

        def reached() -> bool:
            states = self.states(backend)
            return all(states.get(name) == state for name, state in expected.items())

        _wait(f"HAProxy seeing {expected} in {backend}", reached)

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=GUARD
        )

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process, signal.SIGTERM)


@contextmanager
def running_cluster(names: list[str], *args: str, store: str | None = None) -> Iterator[Cluster]:
    """Replicas ``names`` (``lmc serve`` with ``args``) behind HAProxy; all
    stopped after. The data directories are short (kernel sockets live in them)."""
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp, ExitStack() as stack:
        os.chmod(tmp, 0o711)  # sandboxes run as host uids of their own: let them pass
        replicas = [Replica(name, Path(tmp), args, store) for name in names]
        cluster = Cluster(replicas)
        for replica in replicas:  # they start side by side
            stack.callback(replica.stop)
            replica.launch()
        for replica in replicas:
            replica.wait_ready()
        stack.callback(cluster.stop)  # the balancer stops first
        cluster.start_balancer()
        yield cluster
