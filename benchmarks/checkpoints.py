"""Checkpoint, rollback and fork of a Python interpreter, against building its state again.

    python -m benchmarks.checkpoints                 # 1 MB, 100 MB and 1 GB of state
    python -m benchmarks.checkpoints --sizes 1 100 --repeat 3
    python -m benchmarks.checkpoints --no-library    # the service's rows alone

For each size, a Computer builds that much state (a numpy array, every page
written, and a dict of 1,000 strings), then: ``checkpoint()`` (``--repeat``
times, keeping each), ``rollback()`` to the first (until the new kernel answers),
``fork()`` (until the fork's kernel answers); the PSS and private memory of the
unmodified checkpoints' frozen processes, from ``/proc/PID/smaps_rollup``; and,
against them, a new Computer that runs the code that built the state. Times are
the median of the repeats, in milliseconds. It needs numpy. A second table
gives the same over a real ``lmc serve`` (see
:mod:`benchmarks.checkpoints_service`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from lmc_runtime import Computer

__all__ = ["main", "measure"]

BUILD = (
    "import numpy as np\nstate = np.ones({mb} * 2**20 // 8)\n"
    "extra = {{i: str(i) for i in range(1000)}}"
)


def _median_ms(step: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _rollup(pid: int) -> dict[str, int]:
    found: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
        for line in rollup:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                found[parts[0].rstrip(":")] = int(parts[1])
    return found


def _ran(computer: Computer, code: str) -> None:
    final = list(computer.run("python", code))[-1]
    if (final.extras or {}).get("status") != "ok":
        raise SystemExit(f"the code failed: {code!r}")


def measure(mb: int, repeat: int) -> dict[str, float]:
    """The figures for ``mb`` megabytes of state."""
    build = BUILD.format(mb=mb)
    with Computer() as computer:
        _ran(computer, build)
        taken: list[str] = []
        checkpoint = _median_ms(lambda: taken.append(computer.checkpoint()), repeat)
        rollback = _median_ms(lambda: computer.rollback(taken[0]), repeat)
        forks: list[Computer] = []
        fork = _median_ms(lambda: forks.append(computer.fork()), repeat)
        for other in forks:
            _ran(other, f"assert state.nbytes == {mb * 2**20}")
            other.close()
        rollups = [_rollup(info.pid) for info in computer.checkpoints()]
    rebuild = _median_ms(lambda: _fresh(build), repeat)
    private = [r.get("Private_Clean", 0) + r.get("Private_Dirty", 0) for r in rollups]
    return {
        "checkpoint_ms": checkpoint,
        "rollback_ms": rollback,
        "fork_ms": fork,
        "rebuild_ms": rebuild,
        "checkpoints": len(rollups),
        "pss_kib_each": statistics.median(r["Pss"] for r in rollups),
        "private_kib_each": statistics.median(private),
    }


def _fresh(build: str) -> None:
    with Computer() as computer:
        _ran(computer, build)


def _library_table(sizes: Sequence[int], repeat: int, out: TextIO) -> None:
    out.write(
        "| state | checkpoint | rollback | fork | new Computer + re-run"
        " | PSS per checkpoint | private per checkpoint |\n|---|---|---|---|---|---|---|\n"
    )
    for mb in sizes:
        f = measure(mb, repeat)
        out.write(
            f"| {mb} MB | {f['checkpoint_ms']:.0f} ms | {f['rollback_ms']:.0f} ms"
            f" | {f['fork_ms']:.0f} ms | {f['rebuild_ms']:.0f} ms"
            f" | {f['pss_kib_each'] / 1024:.1f} MiB | {f['private_kib_each'] / 1024:.1f} MiB |\n"
        )
        out.flush()


def _service_table(sizes: Sequence[int], repeat: int, out: TextIO) -> None:
    from .checkpoints_service import measure_service, service_server

    out.write(
        "\n| state (lmc serve) | checkpoint | rollback | fork | new session + re-run"
        " | POST fork alone | new session | PSS added per checkpoint | private per checkpoint"
        " | PSS added per fork | the session's PSS |\n" + "|---" * 11 + "|\n"
    )
    with service_server(max(sizes), repeat) as server:
        for mb in sizes:
            f = measure_service(server, mb, repeat)
            mib = {key: f[key] / 1024 for key in f if key.endswith("kib") or "_kib_" in key}
            out.write(
                f"| {mb} MB | {f['checkpoint_ms']:.0f} ms | {f['rollback_ms']:.0f} ms"
                f" | {f['fork_ms']:.0f} ms | {f['rebuild_ms']:.0f} ms"
                f" | {f['fork_request_ms']:.0f} ms | {f['start_ms']:.0f} ms"
                f" | {mib['checkpoint_pss_kib_each']:.1f} MiB"
                f" | {mib['checkpoint_private_kib_each']:.1f} MiB"
                f" | {mib['fork_pss_kib_each']:.1f} MiB | {mib['session_pss_kib']:.1f} MiB |\n"
            )
            out.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 100, 1000], help="MB")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-library", action="store_true", help="the service's rows alone")
    parser.add_argument("--no-service", action="store_true", help="the library's rows alone")
    args = parser.parse_args(argv)
    if not args.no_library:
        _library_table(args.sizes, args.repeat, sys.stdout)
    if not args.no_service:
        _service_table(args.sizes, args.repeat, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
