"""Reading what a server stored, and running code until the store has caught up."""

from __future__ import annotations

import time
from typing import Any

from lmc_runtime.service.transcript import STORE_UNAVAILABLE
from lmc_runtime.store import ThreadStore

from ..service.server import Server, final_status, output

__all__ = ["held_notices", "run_until_stored", "stored_runs"]


def held_notices(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The notices of a run saying its messages are held, not stored."""
    return [m for m in messages if (m.get("extras") or {}).get("status") == STORE_UNAVAILABLE]


def run_until_stored(server: Server, session_id: str, label: str, within: float = 60) -> int:
    """Run ``print('<label>-<n>')`` until a run is stored at once (no held notice);
    every run must still work. The number of runs it took."""
    deadline = time.monotonic() + within
    for attempt in range(1, 10_000):
        messages = server.execute(session_id, f"print('{label}-{attempt}')")
        assert output(messages).startswith(f"{label}-{attempt}\n"), messages
        assert final_status(messages) == "ok", messages
        if not held_notices(messages):
            return attempt
        assert time.monotonic() < deadline, f"the store did not catch up in {within} s"
        time.sleep(0.2)  # the service retries the store at its own pace
    raise AssertionError("unreachable")


def stored_runs(store: ThreadStore, session_id: str) -> list[str]:
    """The code of every run in ``session_id``'s thread, in order."""
    return [
        str(m.content)
        for m in store.messages(session_id)
        if m.role == "assistant" and m.type == "code"
    ]
