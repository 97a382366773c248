"""What the load tests send and how they time it: the mixes, one execution, percentiles."""

from __future__ import annotations

import json
import math
import time
from typing import Any, Protocol

import httpx

__all__ = ["MIX", "MIXES", "Tally", "execute", "load_client", "ms", "percentile", "tallied"]

#: (code, expected final status)
MIX: tuple[tuple[str, str], ...] = (
    ("print('hello')", "ok"),
    ("x = sum(range(1000))\nx", "ok"),
    ("total = 0\nfor i in range(20000):\n    total += i\nprint(total)", "ok"),
    ("import json\nprint(json.dumps({'a': 1}))", "ok"),
    ("1 / 0", "error"),
)
#: The mix in each language the load tests speak: the same five steps in each
#: (print, an expression, a loop, a library call, an error).
MIXES: dict[str, tuple[tuple[str, str], ...]] = {
    "python": MIX,
    "shell": (
        ("echo hello", "ok"),
        ("x=$((1000 * 999 / 2)); echo $x", "ok"),
        ("t=0; for i in $(seq 2000); do t=$((t + i)); done; echo $t", "ok"),
        ("printf '{\"a\": %d}\\n' 1", "ok"),
        ("false", "error"),
    ),
    "javascript": (
        ("console.log('hello')", "ok"),
        ("var x = 999 * 1000 / 2; x", "ok"),
        ("var t = 0; for (var i = 0; i < 20000; i++) t += i; console.log(t)", "ok"),
        ("console.log(JSON.stringify({a: 1}))", "ok"),
        ("throw new Error('boom')", "error"),
    ),
}


def percentile(values: list[float], pct: float) -> float | None:
    """The ``pct`` percentile of ``values`` (nearest rank), None if there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, math.ceil(pct / 100 * len(ordered)) - 1)
    return ordered[rank]


def ms(value: float | None) -> float | None:
    """Seconds as milliseconds, rounded for a report."""
    return None if value is None else round(value * 1000, 2)


async def execute(
    client: httpx.AsyncClient,
    session_id: str,
    code: str,
    language: str = "python",
    *,
    timeout: float | None = None,
) -> tuple[float, Any]:
    """Run ``code`` in the session (stopped after ``timeout`` seconds, if given):
    the round trip to its final message, and the final message's status;
    RuntimeError if it answered otherwise than 200 or its stream did not end with
    the final message."""
    body = {"role": "assistant", "type": "code", "format": language, "content": code}
    params = {"timeout": timeout} if timeout is not None else {}
    url = f"/v1/sessions/{session_id}/execute"
    started = time.perf_counter()
    last: dict[str, Any] = {}
    async with client.stream("POST", url, json=body, params=params) as resp:
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


class Tally(Protocol):
    """Where executions are counted: how many, their round trips, what went wrong."""

    executions: int
    latencies: list[float]
    errors: list[str]


async def tallied(
    tally: Tally,
    client: httpx.AsyncClient,
    session_id: str,
    step: tuple[str, str, str],
) -> bool:
    """Run ``step`` (language, code, expected status) in the session and count it in
    ``tally``: its round trip, or an error for a failure or an unexpected status.
    Whether it ran to its final message."""
    language, code, expected = step
    try:
        elapsed, status = await execute(client, session_id, code, language)
    except (httpx.HTTPError, RuntimeError, ValueError) as exc:
        tally.errors.append(f"execute {language}: {exc!r}")
        return False
    tally.executions += 1
    tally.latencies.append(elapsed)
    if status != expected:
        tally.errors.append(f"{language}: status {status!r}, not {expected!r}: {code!r}")
    return True


def load_client(url: str, token: str | None, connections: int) -> httpx.AsyncClient:
    """A client of ``url`` with ``token`` and room for ``connections`` at once."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    limits = httpx.Limits(max_connections=connections)
    return httpx.AsyncClient(base_url=url, headers=headers, timeout=300, limits=limits)
