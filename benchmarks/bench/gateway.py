"""The ``print(1)`` round trip through a Jupyter gateway against a local kernel.

Run ``python -m benchmarks.bench.gateway --gateway-url http://host:8888
[--gateway-token T] [--samples 50] [--delayed-acks]``: each side's kernel is
started and warmed first, then the sides take turns, ``samples`` runs each, so
that load on the machine falls on all alike. A round trip is from the call to
the final message. It prints the medians (and the 10th and 90th percentiles) in
ms. ``--delayed-acks`` adds a third side, the gateway with ``quick_ack=False``
(the channels' socket left to the system's delayed ACKs), to show what they cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace

from lmc_runtime.backends.jupyter.gateway.rest import Gateway
from lmc_runtime.backends.registry import Registry
from lmc_runtime.computer import Computer

__all__ = ["main", "round_trips"]

_CODE = "print(1)"
_WARM_RUNS = 3


def _once(computer: Computer) -> float:
    start = time.perf_counter()
    messages = list(computer.run("python", _CODE))
    elapsed = time.perf_counter() - start
    final, output = messages[-1], "".join(str(m.content) for m in messages[:-1])
    if (final.extras or {}).get("status") != "ok" or output != "1\n":
        raise RuntimeError(f"print(1) did not run cleanly: {[m.content for m in messages]}")
    return elapsed


def round_trips(
    gateway: Gateway, samples: int, *, delayed_acks: bool = False
) -> dict[str, list[float]]:
    """``samples`` round trips (s) on each side, local and gateway (and the gateway
    without quick ACKs if ``delayed_acks``), interleaved."""
    sides = {"local": Computer(), "gateway": Computer(registry=Registry(gateway=gateway))}
    if delayed_acks:
        slow = replace(gateway, quick_ack=False)
        sides["gateway, delayed ACKs"] = Computer(registry=Registry(gateway=slow))
    times: dict[str, list[float]] = {name: [] for name in sides}
    try:
        for computer in sides.values():
            for _ in range(_WARM_RUNS):
                _once(computer)
        for _ in range(samples):
            for name, computer in sides.items():
                times[name].append(_once(computer))
    finally:
        for computer in sides.values():
            computer.close()
    return times


def _summary(values: list[float]) -> dict[str, float]:
    ms = sorted(v * 1000 for v in values)
    deciles = statistics.quantiles(ms, n=10)
    return {"median_ms": statistics.median(ms), "p10_ms": deciles[0], "p90_ms": deciles[-1]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench.gateway")
    parser.add_argument("--gateway-url", required=True)
    parser.add_argument("--gateway-token")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument(
        "--delayed-acks", action="store_true", help="also time the gateway without quick ACKs"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args(argv)
    gateway = Gateway(args.gateway_url.rstrip("/"), args.gateway_token)
    times = round_trips(gateway, args.samples, delayed_acks=args.delayed_acks)
    figures = {name: _summary(v) for name, v in times.items()}
    if args.json:
        sys.stdout.write(json.dumps({"samples": args.samples, **figures}) + "\n")
        return 0
    sys.stdout.write(f"print(1) round trip, warm, {args.samples} runs each (ms)\n")
    for name, figure in figures.items():
        sys.stdout.write(
            f"  {name:21} median {figure['median_ms']:7.2f}   "
            f"p10 {figure['p10_ms']:7.2f}   p90 {figure['p90_ms']:7.2f}\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
