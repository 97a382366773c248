"""A campaign CI does not run: ``lmc serve`` killed with SIGKILL at random
moments while a client runs code, then started again on the same data
directory, round after round.

    python -m tests.integration.faults.campaign --rounds 20

Each round checks what the previous one left: its session is 410
``session_lost``, every run whose final message the client got is in the
transcript, whole and in order (a run stored but cut off before its end
reached the client may be there too; no other), and no process of the killed
server outlives it. It prints one line a round and the totals.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import psutil

from lmc_runtime.sandbox.stale import clean_stale_sessions
from lmc_runtime.store import JanThreadStore

from ..service.server import TOKEN, Server, _running
from .clients import body, descendants_gone

ARGS = ("--pool-size", "0", "--max-sessions", "2")


@dataclass
class Round:
    """One round's session and the runs its client saw end."""

    session_id: str
    acknowledged: list[int] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)


def _client(server: Server, current: Round, stop: threading.Event) -> None:
    """Run ``print(n)`` for n = 0, 1, ... until the server goes away."""
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
    ) as client:
        number = 0
        while not stop.is_set():
            try:
                answer = client.post(
                    f"/v1/sessions/{current.session_id}/execute", json=body(f"print({number})")
                )
            except httpx.TransportError:
                return
            lines = answer.text.splitlines()
            if answer.status_code == 200 and lines and '"content": null' in lines[-1]:
                current.acknowledged.append(number)
            number += 1


def _check(server: Server, data_dir: Path, last: Round) -> list[str]:
    """What the round before left, wrong: a list of problems (empty when all is well)."""
    problems = []
    with server.client() as client:
        answer = client.get(f"/v1/sessions/{last.session_id}")
    if answer.status_code != 410:
        problems.append(f"session {last.session_id}: {answer.status_code} {answer.text}")
    store = JanThreadStore(data_dir)
    try:
        codes = [m.content for m in store.messages(last.session_id) if m.type == "code"]
    finally:
        store.close()
    stored = [int(str(code)[6:-1]) for code in codes]
    acked = last.acknowledged
    if stored[: len(acked)] != acked or len(stored) > len(acked) + 1:
        problems.append(f"stored {stored[-5:]} for acknowledged {acked[-5:]}")
    left = descendants_gone(last.processes)
    if left:
        problems.append(f"processes left: {left}")
    return problems


def _round(data_dir: Path, last: Round | None, rng: random.Random) -> tuple[Round, list[str]]:
    with _running(data_dir, ARGS, TOKEN) as server:
        problems = _check(server, data_dir, last) if last is not None else []
        current = Round(server.create())
        stop = threading.Event()
        worker = threading.Thread(target=_client, args=(server, current, stop))
        worker.start()
        time.sleep(rng.uniform(0.3, 2.0))  # the kill lands at a random moment
        current.processes = [
            p.pid for p in psutil.Process(server.process.pid).children(recursive=True)
        ]
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=30)
        stop.set()
        worker.join(60)
    return current, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)
        data_dir = Path(tmp) / "data"
        last: Round | None = None
        failures = acknowledged = 0
        try:
            for number in range(options.rounds + 1):
                if number == options.rounds:  # the last start only checks
                    with _running(data_dir, ARGS, TOKEN) as server:
                        problems = _check(server, data_dir, last) if last else []
                else:
                    current, problems = _round(data_dir, last, rng)
                if last is not None:
                    acknowledged += len(last.acknowledged)
                    print(f"round {number}: {len(last.acknowledged)} runs acknowledged, {problems}")
                failures += bool(problems)
                last = current
        finally:
            anyio.run(clean_stale_sessions, data_dir / "sessions")
    print(
        f"{options.rounds} kills, {acknowledged} acknowledged runs, {failures} rounds with problems"
    )
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
