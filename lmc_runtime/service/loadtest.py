"""Load test for a running ``lmc serve``: N concurrent sessions, short executions.

    python -m lmc_runtime.service.loadtest --url http://127.0.0.1:8765 --token T -n 10
    python -m lmc_runtime.service.loadtest --url http://balancer:8765 --hold 200

Each session is created, runs ``--rounds`` rounds of a mix of short executions
(print, arithmetic, a small loop, an import, an exception; in Python, or in the
shell with ``--language shell``), and is then left idle while its memory is read
from ``GET /v1/sessions/{id}``; finally it is deleted. Reported: execution
round-trip latency (p50, p99), session creation time (pooled and cold), errors,
memory per idle session, and how many sessions each replica held (from the
``<replica>-`` prefix of their ids, behind a balancer). ``--hold N`` instead
opens sessions one by one until the server refuses one (or N are open) and
reports how many it held, then deletes them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import httpx

from .replicas import replica_of

__all__ = ["MIX", "MIXES", "LoadReport", "hold_sessions", "main", "run_load"]

#: (code, expected final status)
MIX: tuple[tuple[str, str], ...] = (
    ("print('hello')", "ok"),
    ("x = sum(range(1000))\nx", "ok"),
    ("total = 0\nfor i in range(20000):\n    total += i\nprint(total)", "ok"),
    ("import json\nprint(json.dumps({'a': 1}))", "ok"),
    ("1 / 0", "error"),
)
#: The mix in each language the load test speaks.
MIXES: dict[str, tuple[tuple[str, str], ...]] = {
    "python": MIX,
    "shell": (
        ("echo hello", "ok"),
        ("x=$((1000 * 999 / 2)); echo $x", "ok"),
        ("t=0; for i in $(seq 2000); do t=$((t + i)); done; echo $t", "ok"),
        ("printf '{\"a\": %d}\\n' 1", "ok"),
        ("false", "error"),
    ),
}


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
            "p50_ms": _ms(_percentile(self.latencies, 50)),
            "p99_ms": _ms(_percentile(self.latencies, 99)),
            "errors": len(self.errors),
            "error_samples": self.errors[:5],
            "pooled_create_p50_ms": _ms(_percentile(self.pooled_create, 50)),
            "pooled_sessions": len(self.pooled_create),
            "cold_create_p50_ms": _ms(_percentile(self.cold_create, 50)),
            "idle_memory_mib_per_session": None if memory is None else round(memory / 2**20, 1),
            "replicas": dict(sorted(self.replicas.items())),
        }


def _percentile(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, math.ceil(pct / 100 * len(ordered)) - 1)
    return ordered[rank]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 2)


async def _execute(
    client: httpx.AsyncClient, session_id: str, code: str, language: str = "python"
) -> tuple[float, Any]:
    body = {"role": "assistant", "type": "code", "format": language, "content": code}
    started = time.perf_counter()
    last: dict[str, Any] = {}
    async with client.stream("POST", f"/v1/sessions/{session_id}/execute", json=body) as resp:
        if resp.status_code != 200:
            await resp.aread()
            raise RuntimeError(f"execute answered {resp.status_code}: {resp.text[:200]}")
        async for line in resp.aiter_lines():
            if line:
                last = json.loads(line)
    elapsed = time.perf_counter() - started
    if last.get("format") != "active_line" or last.get("content") is not None:
        raise RuntimeError(f"the stream did not end with active_line null: {last}")
    return elapsed, (last.get("extras") or {}).get("status")


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
                try:
                    elapsed, status = await _execute(client, session_id, code, language)
                except (httpx.HTTPError, RuntimeError, ValueError) as exc:
                    report.errors.append(f"execute: {exc!r}")
                    continue
                report.executions += 1
                report.latencies.append(elapsed)
                if status != expected:
                    report.errors.append(f"status {status!r} instead of {expected!r} for {code!r}")
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


def _client(url: str, token: str | None, connections: int) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = httpx.Limits(max_connections=connections)
    return httpx.AsyncClient(base_url=url, headers=headers, timeout=300, limits=limits)


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
    async with _client(url, token, sessions * 2 + 4) as client:
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
    async with _client(url, token, 8) as client:
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


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; writes one JSON object per N to stdout."""
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
    args = parser.parse_args(argv)
    if args.hold is not None:
        held = anyio.run(hold_sessions, args.url, args.token, args.hold, args.language)
        sys.stdout.write(json.dumps(held) + "\n")
        return 0
    for n in args.sessions:
        report = anyio.run(
            partial(run_load, together=args.together),
            args.url,
            args.token,
            n,
            args.rounds,
            args.language,
        )
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
