"""Capacity of 1, 2 and 3 ``lmc serve`` replicas behind HAProxy on this host
(not a test: ``python -m tests.integration.scale.measure``, a few minutes).

For each count: the replicas (real sandbox, ``--max-sessions 20 --pool-size 4``
each) behind ``examples/deploy/haproxy.cfg``; a fixed load through the balancer
(20 concurrent Python sessions, made first, then 4 rounds of the load test's
mix each: execute p50 and p99; with one replica, the same load on the replica
directly too); then Python sessions opened one by one through it until one is
refused (sessions held). One JSON line per count.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial

import anyio

from benchmarks.load.loadtest import hold_sessions, run_load

from ..service.server import TOKEN
from .cluster import running_cluster


def measure(count: int, sessions: int, rounds: int, per_replica: int) -> dict[str, object]:
    names = [f"r{i}" for i in range(1, count + 1)]
    args = ("--pool-size", str(min(4, per_replica)), "--max-sessions", str(per_replica))
    with running_cluster(names, *args) as cluster:
        started = time.perf_counter()
        load = anyio.run(
            partial(run_load, together=True), cluster.url, TOKEN, sessions, rounds
        ).to_dict()
        took = time.perf_counter() - started
        held = anyio.run(hold_sessions, cluster.url, TOKEN, per_replica * count + 10)
        direct = {}
        if count == 1:  # the same load on the replica itself: what the balancer adds
            server = cluster.replicas[0].server
            assert server is not None
            alone = anyio.run(partial(run_load, together=True), server.url, TOKEN, sessions, rounds)
            direct = {
                "direct_p50_ms": alone.to_dict()["p50_ms"],
                "direct_p99_ms": alone.to_dict()["p99_ms"],
            }
    return {
        **direct,
        "replicas": count,
        "load_sessions": sessions,
        "executions": load["executions"],
        "load_seconds": round(took, 1),  # creating, running, reading memory, deleting
        "p50_ms": load["p50_ms"],
        "p99_ms": load["p99_ms"],
        "errors": load["errors"],
        "error_samples": load["error_samples"],
        "load_spread": load["replicas"],
        "idle_mib_per_session": load["idle_memory_mib_per_session"],
        "held": held["held"],
        "held_spread": held["replicas"],
        "hold_stopped": held["stopped"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--per-replica", type=int, default=20, help="--max-sessions of each")
    args = parser.parse_args()
    sys.stdout.write(json.dumps({"load_average_before": os.getloadavg()}) + "\n")
    for count in args.replicas:
        figures = measure(count, args.sessions, args.rounds, args.per_replica)
        sys.stdout.write(json.dumps(figures) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
