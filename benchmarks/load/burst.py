"""Burst test for a running ``lmc serve``: N session creations at once.

    python -m benchmarks.load.burst --url http://127.0.0.1:8765 --token T -n 50
    python -m benchmarks.load.burst --token T -n 50 --bursts 2 --gap 20

Each burst asks for N sessions at the same moment; each session, once created,
runs ``print(1)``. Reported per burst, one JSON object a line: how many warm
sessions the pool held when it began (``/healthz``), p50 and p99 of the time to
ready (the ``201`` of ``POST /v1/sessions``) and to the first result (the end
of the ``print(1)`` stream, counted from the same moment), how many sessions
came from the pool, and the errors. The sessions are deleted after each burst;
``--gap`` seconds pass between bursts, in which the pool may adapt to the one
before (see ``--pool-max``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx

from .loadwire import execute

__all__ = ["BurstReport", "main", "run_bursts"]


def _percentile(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


@dataclass
class BurstReport:
    """What one burst measured."""

    sessions: int
    pool_ready_before: int | None = None
    ready: list[float] = field(default_factory=list)
    first_result: list[float] = field(default_factory=list)
    pooled: int = 0
    errors: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "pool_ready_before": self.pool_ready_before,
            "created": len(self.ready),
            "pooled": self.pooled,
            "ready_p50_ms": _ms(_percentile(self.ready, 50)),
            "ready_p99_ms": _ms(_percentile(self.ready, 99)),
            "first_result_p50_ms": _ms(_percentile(self.first_result, 50)),
            "first_result_p99_ms": _ms(_percentile(self.first_result, 99)),
            "errors": len(self.errors),
            "error_samples": self.errors[:5],
        }


async def _one(client: httpx.AsyncClient, report: BurstReport, began: float) -> None:
    try:
        created = await client.post("/v1/sessions", json={})
        if created.status_code != 201:
            report.errors.append(f"create: {created.status_code} {created.text[:200]}")
            return
        report.ready.append(time.perf_counter() - began)
        info = created.json()
        report.created.append(str(info["id"]))
        report.pooled += bool(info.get("pooled"))
        _, status = await execute(client, str(info["id"]), "print(1)")
        if status != "ok":
            report.errors.append(f"print(1) ended {status!r}")
            return
        report.first_result.append(time.perf_counter() - began)
    except (httpx.HTTPError, RuntimeError, ValueError, KeyError) as exc:
        report.errors.append(f"session: {exc!r}")


async def _pool_ready(client: httpx.AsyncClient) -> int | None:
    with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
        return int((await client.get("/healthz")).json()["pool_ready"])
    return None


async def _burst(client: httpx.AsyncClient, sessions: int) -> BurstReport:
    report = BurstReport(sessions=sessions, pool_ready_before=await _pool_ready(client))
    try:
        with anyio.fail_after(600):
            began = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(sessions):
                    tg.start_soon(_one, client, report, began)
    finally:
        with anyio.CancelScope(shield=True):
            for session_id in report.created:
                with contextlib.suppress(httpx.HTTPError):
                    await client.delete(f"/v1/sessions/{session_id}")
    return report


async def run_bursts(
    url: str, token: str | None, sessions: int, bursts: int = 1, gap: float = 0.0
) -> list[BurstReport]:
    """``bursts`` bursts of ``sessions`` creations against ``url``, ``gap`` seconds apart."""
    reports = []
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = httpx.Limits(max_connections=sessions * 2 + 4)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=300, limits=limits
    ) as client:
        for index in range(bursts):
            if index:
                await anyio.sleep(gap)  # the arrival schedule, not a wait for a condition
            reports.append(await _burst(client, sessions))
    return reports


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; writes one JSON object per burst to stdout."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765")
    parser.add_argument("--token", default=os.environ.get("LMC_TOKEN"))
    parser.add_argument("-n", "--sessions", type=int, default=50, help="creations per burst")
    parser.add_argument("--bursts", type=int, default=1, help="how many bursts")
    parser.add_argument("--gap", type=float, default=20.0, help="seconds between bursts")
    args = parser.parse_args(argv)

    async def run() -> list[BurstReport]:
        return await run_bursts(args.url, args.token, args.sessions, args.bursts, args.gap)

    for report in anyio.run(run):
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
