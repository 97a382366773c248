"""A runaway session is stopped at its wall limit while another session keeps answering."""

from __future__ import annotations

import threading
from typing import Any

from .server import Server, final_status, output


def test_busy_loop_is_stopped_while_a_second_session_answers(server: Server) -> None:
    runaway = server.create(limits={"wall_seconds": 3})
    healthy = server.create()
    result: dict[str, list[dict[str, Any]]] = {}
    worker = threading.Thread(
        target=lambda: result.__setitem__("messages", server.execute(runaway, "while True: pass"))
    )
    worker.start()
    try:
        for i in range(5):
            assert output(server.execute(healthy, f"print({i} * 2)")) == f"{i * 2}\n"
        worker.join(60)
        assert not worker.is_alive()
        messages = result["messages"]
        assert final_status(messages) == "timeout"
        assert any((m.get("extras") or {}).get("status") == "timeout" for m in messages[:-1])
        # Both recover.
        assert output(server.execute(runaway, "print('alive')")) == "alive\n"
    finally:
        worker.join(60)
        server.delete(runaway)
        server.delete(healthy)
