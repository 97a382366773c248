"""The service's checkpoint, rollback and fork, against a new session that re-runs
the code that built the state.

One real ``lmc serve`` (sandboxed when this host gives it, the pool off, limits
sized for the largest state: see :func:`serve_args`) holds a session that builds
the state of :data:`benchmarks.checkpoints.BUILD`; then, through
``RemoteComputer`` (the routes ``POST /v1/sessions/{id}/checkpoints``,
``.../rollback`` and ``.../fork``): ``repeat`` checkpoints, kept; ``repeat``
rollbacks to the first; ``repeat`` forks, each timed until it answers a run (and
its ``POST .../fork`` alone: the new session made and the state carried); and
``repeat`` new sessions, each timed until it has re-run the build; and, to
tell a fork's parts apart, ``repeat`` new sessions timed until they answer
``pass``.

Memory is the PSS of the server's whole process tree (shared pages counted once
in the sum; a first session has started and ended, so the fork server is among
them), read before and after: what the unmodified checkpoints added, and
what the forks added, divided by their number. A fork is a new session in a new
sandbox that loaded a copy of the state, so its figure is a whole session's
memory; the parent session's own figure is given beside it.
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from lmc_runtime.errors import LMCError
from lmc_runtime.sandbox import sandbox_available

from .bench import pss
from .bench.service import local_server
from .bench.workloads import BenchError
from .checkpoints import BUILD

if TYPE_CHECKING:
    from lmc_runtime.remote import RemoteComputer

__all__ = ["ServiceServer", "measure_service", "service_server"]

logger = logging.getLogger(__name__)

#: How long the client waits for an answer other than a run's (a fork of 1 GB
#: pickles, copies and loads the state), in seconds.
_REQUEST_TIMEOUT = 600.0
_MIB = 2**20


class ServiceServer:
    """A running ``lmc serve``: its URL, token, process id and whether it sandboxes."""

    def __init__(self, url: str, token: str, pid: int, sandboxed: bool) -> None:
        self.url, self.token, self.pid, self.sandboxed = url, token, pid, sandboxed

    def tree_pss_kib(self) -> int:
        """The PSS of the server and every process under it, summed (KiB)."""
        return sum(process.pss for process in pss.tree_memory(self.pid))

    def checkpoint_memory(self, computer: RemoteComputer) -> list[int]:
        """The private memory of each of ``computer``'s session's checkpoints (bytes):
        the route's ``memory_bytes``, without its copy of the files."""
        import httpx

        listed = httpx.get(
            f"{self.url}/v1/sessions/{computer.session_id}/checkpoints",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=_REQUEST_TIMEOUT,
        )
        listed.raise_for_status()
        return [int(each["memory_bytes"]) for each in listed.json()["checkpoints"]]

    def computer(self, session: str | None = None) -> RemoteComputer:
        from lmc_runtime.remote import RemoteComputer, RemoteTimeouts

        timeouts = RemoteTimeouts(request=_REQUEST_TIMEOUT)
        if session is None:
            return RemoteComputer(self.url, token=self.token, timeouts=timeouts)
        return RemoteComputer(
            self.url, token=self.token, timeouts=timeouts, session=session, delete_on_close=True
        )


def serve_args(max_mb: int, repeat: int, sandboxed: bool) -> list[str]:
    """``lmc serve``'s options for states up to ``max_mb``: the pool off (a fork
    never takes a warm session, so neither does the re-run); memory for the state,
    its pickle during a fork and the checkpoints' pages (a checkpoint is refused
    past half of the limit); disk and file size for the fork's pickle file."""
    memory = 4 * max_mb + 1024
    disk = 2 * max_mb + 512
    args = ["--pool-size", "0", "--max-sessions", str(repeat + 4)]
    args += ["--max-checkpoints", str(max(8, repeat))]
    args += ["--memory", f"{memory}M", "--disk", f"{disk}M", "--file-size", f"{max_mb + 256}M"]
    return args if sandboxed else [*args, "--no-sandbox"]


def _server_pid() -> int:
    """The ``lmc serve`` this process started last."""
    found = pss.child_running(b"serve")
    if found is None:
        raise BenchError("the server's process is not a child of this one")
    return found


@contextmanager
def service_server(max_mb: int, repeat: int) -> Iterator[ServiceServer]:
    """A real ``lmc serve`` for states up to ``max_mb`` (see :func:`serve_args`)."""
    sandboxed = sandbox_available().available
    with local_server(*serve_args(max_mb, repeat, sandboxed)) as (url, token):
        pid = _server_pid()
        server = ServiceServer(url, token, pid, sandboxed)
        try:
            _fresh(server, "pass")  # what the first session starts (the fork server)
            yield server
        except (BenchError, LMCError):
            logger.warning("lmc serve's log ends with:\n%s", _log_tail(pid))
            raise


def _log_tail(pid: int, size: int = 4000) -> str:
    """The end of what the server wrote to its log (its standard error)."""
    try:
        with open(f"/proc/{pid}/fd/2", "rb") as log:
            log.seek(max(0, os.fstat(log.fileno()).st_size - size))
            return log.read().decode(errors="replace")
    except OSError as exc:
        return f"(unreadable: {exc})"


def _ran(computer: RemoteComputer, code: str) -> None:
    final = list(computer.run("python", code))[-1]
    if (final.extras or {}).get("status") != "ok":
        raise BenchError(f"the code failed on the service: {code!r} ({final.content!r})")


def _timed(step: Callable[[], object]) -> float:
    start = time.perf_counter()
    step()
    return (time.perf_counter() - start) * 1000


def _median_ms(times: Sequence[float]) -> float:
    return statistics.median(times)


def measure_service(server: ServiceServer, mb: int, repeat: int) -> dict[str, float]:
    """The service's figures for ``mb`` megabytes of state, on ``server``."""
    build = BUILD.format(mb=mb)
    check = f"assert state.nbytes == {mb * _MIB} and len(extra) == 1000"
    idle = server.tree_pss_kib()
    parent = server.computer()
    try:
        _ran(parent, build)
        built = server.tree_pss_kib()
        taken: list[str] = []
        checkpoint = [_timed(lambda: taken.append(parent.checkpoint())) for _ in range(repeat)]
        checkpointed = server.tree_pss_kib()
        private = server.checkpoint_memory(parent)
        rollback = [_timed(lambda: parent.rollback(taken[0])) for _ in range(repeat)]
        _ran(parent, check)
        before_forks = server.tree_pss_kib()
        forks: list[RemoteComputer] = []
        requests: list[float] = []
        try:
            fork = [_timed(lambda: _fork(parent, forks, requests, check)) for _ in range(repeat)]
            forked = server.tree_pss_kib()
        finally:
            for other in forks:
                other.close()
    finally:
        parent.close()
    rebuild = [_timed(lambda: _fresh(server, build)) for _ in range(repeat)]
    start = [_timed(lambda: _fresh(server, "pass")) for _ in range(repeat)]
    logger.info("service checkpoints at %d MB: done", mb)
    return {
        "checkpoint_ms": _median_ms(checkpoint),
        "rollback_ms": _median_ms(rollback),
        "fork_ms": _median_ms(fork),
        "fork_request_ms": _median_ms(requests),
        "rebuild_ms": _median_ms(rebuild),
        "start_ms": _median_ms(start),
        "checkpoints": len(taken),
        "forks": len(forks),
        "session_pss_kib": built - idle,
        "checkpoint_pss_kib_each": (checkpointed - built) / len(taken),
        "checkpoint_private_kib_each": statistics.median(private) / 1024,
        "fork_pss_kib_each": (forked - before_forks) / len(forks),
        "sandboxed": float(server.sandboxed),
    }


def _fork(
    parent: RemoteComputer, forks: list[RemoteComputer], requests: list[float], check: str
) -> None:
    """A fork of ``parent``, until it has answered a run that checks the state (the
    time of its ``POST .../fork`` alone goes to ``requests``)."""
    requests.append(_timed(lambda: forks.append(parent.fork())))
    _ran(forks[-1], check)


def _fresh(server: ServiceServer, code: str) -> None:
    """A new session, until it has run ``code`` (the build, or ``pass``)."""
    computer = server.computer()
    try:
        _ran(computer, code)
    finally:
        computer.close()
