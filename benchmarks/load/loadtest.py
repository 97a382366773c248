"""Load test for a running ``lmc serve``: N concurrent sessions, short executions.

    python -m benchmarks.load.loadtest --url http://127.0.0.1:8765 --token T -n 10
    python -m benchmarks.load.loadtest --url http://balancer:8765 --hold 200
    python -m benchmarks.load.loadtest --token T -n 50 --duration 600

Each session is created, runs ``--rounds`` rounds of a mix of short executions
(print, arithmetic, a small loop, an import, an exception; in Python, or in the
shell or JavaScript with ``--language``), and is then left idle while its memory is read
from ``GET /v1/sessions/{id}``; finally it is deleted. Reported: execution
round-trip latency (p50, p99), session creation time (pooled and cold), errors,
memory per idle session, and how many sessions each replica held (from the
``<replica>-`` prefix of their ids, behind a balancer). ``--hold N`` instead
opens sessions one by one until the server refuses one (or N are open) and
reports how many it held, then deletes them. ``--duration SECONDS`` instead
runs every language of ``--languages`` in each session for that long and
reports the server's footprint too (:mod:`.loadmix`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx

from lmc_runtime.service.replicas import replica_of

from .census import CensusTarget, server_pid
from .loadmix import run_mixed
from .loadwire import MIX, MIXES, load_client, ms, percentile, tallied

__all__ = ["MIX", "MIXES", "LoadReport", "hold_sessions", "main", "run_load"]


@dataclass
class LoadReport:
    """What one load run measured."""

    sessions: int
    executions: int = 0
    latencies: list[float] = field(default_factory=list)
    pooled_create: list[float] = field(default_factory=list)
    cold_create: list[float] = field(default_factory=list)
    idle_memory: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    replicas: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        memory = statistics.mean(self.idle_memory) if self.idle_memory else None
        return {
            "sessions": self.sessions,
            "executions": self.executions,
            "p50_ms": ms(percentile(self.latencies, 50)),
            "p99_ms": ms(percentile(self.latencies, 99)),
            "errors": len(self.errors),
            "error_samples": self.errors[:5],
            "pooled_create_p50_ms": ms(percentile(self.pooled_create, 50)),
            "pooled_sessions": len(self.pooled_create),
            "cold_create_p50_ms": ms(percentile(self.cold_create, 50)),
            "idle_memory_mib_per_session": None if memory is None else round(memory / 2**20, 1),
            "replicas": dict(sorted(self.replicas.items())),
        }


class _Barrier:
    """Every session waits here, idle, until all have arrived; then memory is read."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.arrived = 0
        self.all_idle = anyio.Event()
        if expected <= 0:
            self.all_idle.set()

    def arrive(self) -> None:
        self.arrived += 1
        if self.arrived >= self.expected:
            self.all_idle.set()


async def _create(client: httpx.AsyncClient, report: LoadReport, language: str) -> str | None:
    started = time.perf_counter()
    created = await client.post("/v1/sessions", json={"languages": [language]})
    if created.status_code != 201:
        report.errors.append(f"create: {created.status_code} {created.text[:200]}")
        return None
    info = created.json()
    (report.pooled_create if info["pooled"] else report.cold_create).append(
        time.perf_counter() - started
    )
    session_id = str(info["id"])
    report.replicas[replica_of(session_id) or "-"] += 1
    return session_id


async def _one_session(
    client: httpx.AsyncClient,
    report: LoadReport,
    rounds: int,
    barriers: tuple[_Barrier, _Barrier],
    language: str,
) -> None:
    """One session; ``barriers``: where every session waits until all are made
    (when the load starts together), and where they wait idle for the memory."""
    made, barrier = barriers
    arrived = False
    session_id: str | None = None
    try:
        try:
            session_id = await _create(client, report, language)
        finally:
            made.arrive()
        if session_id is None:
            return
        await made.all_idle.wait()
        for _ in range(rounds):
            for code, expected in MIXES[language]:
                await tallied(report, client, session_id, (language, code, expected))
        arrived = True
        barrier.arrive()
        await barrier.all_idle.wait()
        usage = (await client.get(f"/v1/sessions/{session_id}")).json().get("usage") or {}
        if isinstance(usage.get("memory_bytes"), int):
            report.idle_memory.append(usage["memory_bytes"])
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        report.errors.append(f"session: {exc!r}")
    finally:
        if not arrived:  # counted once, whatever happened, so no one waits forever
            barrier.arrive()
        if session_id is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(httpx.HTTPError):
                await client.delete(f"/v1/sessions/{session_id}")


async def run_load(
    url: str,
    token: str | None,
    sessions: int,
    rounds: int,
    language: str = "python",
    *,
    together: bool = False,
) -> LoadReport:
    """Drive ``sessions`` concurrent sessions of ``language`` against ``url``;
    ``together``: they start executing once all are made (no kernel starts then)."""
    report = LoadReport(sessions=sessions)
    async with load_client(url, token, sessions * 2 + 4) as client:
        barriers = (_Barrier(sessions if together else 0), _Barrier(sessions))
        with anyio.fail_after(1800):
            async with anyio.create_task_group() as tg:
                for _ in range(sessions):
                    tg.start_soon(_one_session, client, report, rounds, barriers, language)
    return report


async def hold_sessions(
    url: str, token: str | None, most: int, language: str = "python"
) -> dict[str, Any]:
    """Open sessions one by one until the server refuses one or ``most`` are
    open; how many it held (by replica) and why it stopped; then delete them."""
    held: list[str] = []
    stopped = f"reached {most}"
    async with load_client(url, token, 8) as client:
        try:
            with anyio.fail_after(1800):
                while len(held) < most:
                    created = await client.post("/v1/sessions", json={"languages": [language]})
                    if created.status_code != 201:
                        stopped = f"{created.status_code} {created.text[:200]}"
                        break
                    held.append(created.json()["id"])
        finally:
            with anyio.CancelScope(shield=True):
                for session_id in held:
                    with contextlib.suppress(httpx.HTTPError):
                        await client.delete(f"/v1/sessions/{session_id}")
    replicas = Counter(replica_of(session_id) or "-" for session_id in held)
    return {"held": len(held), "replicas": dict(sorted(replicas.items())), "stopped": stopped}


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765")
    parser.add_argument("--token", default=os.environ.get("LMC_TOKEN"))
    parser.add_argument("-n", "--sessions", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--rounds", type=int, default=4, help="rounds of the mix per session")
    parser.add_argument("--language", choices=sorted(MIXES), default="python")
    parser.add_argument(
        "--together", action="store_true", help="make every session before any executes"
    )
    parser.add_argument(
        "--hold", type=int, metavar="N", help="open up to N sessions; report how many were held"
    )
    timed = parser.add_argument_group("timed mixed load (--duration)")
    timed.add_argument(
        "--duration", type=float, metavar="SECONDS", help="run the mix for this long instead"
    )
    timed.add_argument(
        "--languages", nargs="+", choices=sorted(MIXES), default=["python", "shell", "javascript"]
    )
    timed.add_argument("--pid", type=int, help="the server's pid (default: found by --url's port)")
    timed.add_argument("--data-dir", type=Path, help="the server's --data-dir, to count its files")
    timed.add_argument(
        "--cgroup-prefix",
        default="lmc-",
        help="its sessions' cgroups (default every session's; lmc-REPLICA- for a replica)",
    )
    timed.add_argument("--flat-percent", type=float, default=10.0, help="RSS growth called flat")
    timed.add_argument("--sample-every", type=float, default=2.0, metavar="SECONDS")
    return parser.parse_args(argv)


def _timed(args: argparse.Namespace, sessions: int) -> dict[str, Any]:
    """One timed mixed load of ``sessions``, counting the server when it is here."""
    pid = args.pid
    if pid is None:
        port = httpx.URL(args.url).port
        host = httpx.URL(args.url).host
        if port is not None and host in ("127.0.0.1", "localhost", "::1"):
            pid = server_pid(port)
    target = None
    if pid is not None:
        target = CensusTarget(pid, args.data_dir, cgroup_prefix=args.cgroup_prefix)
    run = partial(
        run_mixed,
        target=target,
        flat_percent=args.flat_percent,
        sample_every=args.sample_every,
    )
    report = anyio.run(run, args.url, args.token, sessions, args.duration, args.languages)
    return {**report.to_dict(), "server_pid": pid}


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; writes one JSON object per N to stdout."""
    args = _arguments(argv)
    if args.hold is not None:
        held = anyio.run(hold_sessions, args.url, args.token, args.hold, args.language)
        sys.stdout.write(json.dumps(held) + "\n")
        return 0
    for n in args.sessions:
        if args.duration is not None:
            figures = _timed(args, n)
        else:
            report = anyio.run(
                partial(run_load, together=args.together),
                args.url,
                args.token,
                n,
                args.rounds,
                args.language,
            )
            figures = report.to_dict()
        sys.stdout.write(json.dumps(figures) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
