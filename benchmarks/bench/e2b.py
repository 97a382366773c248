"""The E2B door's cost (``lmc bench --only e2b``): E2B's own Python SDK against a
real ``lmc serve``, each figure beside its comparison measured in the same run
on the same server.

- ``Sandbox.create()`` to the first ``run_code`` result, against
  ``RemoteComputer``'s session creation to its first result (p50 and p90);
- the warm ``run_code("print(1)")`` round trip, against ``RemoteComputer.run``;
- a burst of ``Sandbox.create()`` at once (50; 10 with ``--quick``), against the
  same burst of lmc sessions.

The server runs with its defaults (the sandbox when this host can give it, the
pool), as an operator runs it, with room for the bursts.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .model import Figure, Timing
from .service import local_server
from .workloads import BenchError

__all__ = ["E2BFigures", "e2b_phase", "missing_for_e2b"]

_BURST, _BURST_QUICK = 50, 10


def missing_for_e2b() -> str | None:
    """Why the E2B rows cannot be measured here, or None."""
    try:
        import e2b_code_interpreter  # noqa: F401
    except ImportError:
        return "the E2B rows need E2B's SDK: pip install e2b-code-interpreter"
    return None


def _timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _burst(count: int, make: Callable[[], Any], end: Callable[[Any], None]) -> float:
    """Seconds until ``count`` made at once have all answered."""
    with ThreadPoolExecutor(count) as pool:
        started = time.perf_counter()
        made = list(pool.map(lambda _: make(), range(count)))
        took = time.perf_counter() - started
        list(pool.map(end, made))
    return took


@dataclass(frozen=True)
class E2BFigures:
    """E2B's SDK against ``RemoteComputer`` on the same server."""

    create_first_e2b: Timing
    create_first_lmc: Timing
    round_trip_e2b: Timing
    round_trip_lmc: Timing
    burst: int
    burst_e2b_s: float
    burst_lmc_s: float

    def figures(self) -> list[Figure]:
        rows = []
        for key, name, ours, base in (
            (
                "create_first",
                "Sandbox.create() to the first run_code result",
                self.create_first_e2b,
                self.create_first_lmc,
            ),
            (
                "round_trip",
                'warm run_code("print(1)") round trip',
                self.round_trip_e2b,
                self.round_trip_lmc,
            ),
        ):
            for stat in ("median", "p90"):
                mine = getattr(ours, f"{stat}_ms")
                theirs = getattr(base, f"{stat}_ms")
                rows.append(
                    Figure(
                        f"e2b_{key}_{stat}",
                        f"{name}, {stat}",
                        "ms",
                        mine,
                        theirs,
                        "RemoteComputer",
                        mine / theirs if theirs else None,
                        informational=True,
                    )
                )
        rows.append(
            Figure(
                "e2b_burst",
                f"{self.burst} Sandbox.create() at once, all answered",
                "s",
                self.burst_e2b_s,
                self.burst_lmc_s,
                f"{self.burst} lmc sessions",
                self.burst_e2b_s / self.burst_lmc_s if self.burst_lmc_s else None,
                informational=True,
            )
        )
        return rows


def e2b_phase(*, quick: bool = False) -> E2BFigures:
    """Measure the E2B rows on a server of their own."""
    from e2b_code_interpreter import Sandbox

    from lmc_runtime.remote import RemoteComputer

    samples = 5 if quick else 20
    trips = 30 if quick else 200
    burst = _BURST_QUICK if quick else _BURST
    serve_args = ("--max-sessions", str(2 * burst + 4), "--pool-max", str(burst))
    with local_server(*serve_args, token="e2b_" + secrets.token_hex(20)) as (url, token):
        os.environ.update(E2B_API_KEY=token, E2B_API_URL=url, E2B_SANDBOX_URL=url)
        os.environ.pop("E2B_DOMAIN", None)

        def e2b_first() -> float:
            started = time.perf_counter()
            sbx = Sandbox.create(timeout=120)
            if sbx.run_code("1").text != "1":
                raise BenchError("run_code did not answer 1")
            took = time.perf_counter() - started
            sbx.kill()
            return took

        def lmc_first() -> float:
            started = time.perf_counter()
            with RemoteComputer(url, token=token) as computer:
                code = {"role": "assistant", "type": "code", "format": "python", "content": "1"}
                if not any(m.content == "1" for m in computer.run(code)):
                    raise BenchError("RemoteComputer.run did not answer 1")
                took = time.perf_counter() - started
            return took

        firsts_e2b, firsts_lmc = [], []
        for _ in range(samples):  # alternated: the same drift for both
            firsts_e2b.append(e2b_first())
            firsts_lmc.append(lmc_first())
        sbx = Sandbox.create(timeout=600)
        code = {"role": "assistant", "type": "code", "format": "python", "content": "print(1)"}
        with RemoteComputer(url, token=token) as computer:
            sbx.run_code("print(1)")
            list(computer.run(code))
            trips_e2b, trips_lmc = [], []
            for _ in range(trips):
                trips_e2b.append(_timed(lambda: sbx.run_code("print(1)")))
                trips_lmc.append(_timed(lambda: list(computer.run(code))))
        sbx.kill()
        burst_e2b = _burst(burst, lambda: Sandbox.create(timeout=120), lambda s: s.kill())
        burst_lmc = _burst(
            burst, lambda: RemoteComputer(url, token=token).__enter__(), lambda c: c.close()
        )
    return E2BFigures(
        Timing.from_seconds(firsts_e2b),
        Timing.from_seconds(firsts_lmc),
        Timing.from_seconds(trips_e2b),
        Timing.from_seconds(trips_lmc),
        burst,
        burst_e2b,
        burst_lmc,
    )
