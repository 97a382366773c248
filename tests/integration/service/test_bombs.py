"""Each bomb, sent to a real ``lmc serve``, ends with a typed message to its own
session while a second session keeps answering during and after it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from .server import Server, final_status, output

BOMBS = {
    "fork_bomb": (
        "import os\nwhile True:\n    os.fork()\n",
        {"processes": 48},
        {"process_limit"},
    ),
    "huge_allocation": ("a = bytearray(10**11)", {}, {"memory_limit"}),
    "full_disk": (
        'chunk = b"x" * (1 << 20)\n'
        "try:\n"
        '    with open("fill.bin", "wb") as f:\n'
        "        while True:\n"
        "            f.write(chunk)\n"
        "            f.flush()\n"
        "except OSError as exc:\n"
        '    print("STOPPED", exc.errno)\n',
        {"disk_bytes": 16 << 20, "file_size_bytes": 64 << 20},
        {"disk_limit"},
    ),
    "busy_loop": ("while True: pass", {"cpu_seconds": 1.0}, {"cpu_limit"}),
    "gigabyte_of_output": (
        'line = "x" * 1023\nfor _ in range(1 << 20):\n    print(line)',
        {"output_bytes": 10_000},
        {"truncated"},
    ),
}


def _statuses(messages: list[dict[str, Any]]) -> set[Any]:
    return {(m.get("extras") or {}).get("status") for m in messages}


@pytest.mark.parametrize("name", list(BOMBS))
def test_bomb_is_contained_while_another_session_answers(server: Server, name: str) -> None:
    code, limits, expected = BOMBS[name]
    bombed = server.create(limits=limits)
    healthy = server.create()
    result: dict[str, list[dict[str, Any]]] = {}
    worker = threading.Thread(
        target=lambda: result.__setitem__("messages", server.execute(bombed, code))
    )
    worker.start()
    try:
        answered = 0
        while worker.is_alive() or answered < 3:  # the healthy session answers throughout
            assert output(server.execute(healthy, f"print({answered} * 2)")) == f"{answered * 2}\n"
            answered += 1
            worker.join(0.2)
            assert answered < 300, "the bomb was never stopped"
        messages = result["messages"]
        assert _statuses(messages) & expected, (name, _statuses(messages))
        assert final_status(messages) in expected | {"ok", "error"}, final_status(messages)
        assert len(str(messages)) < 200_000, "the client got a bounded answer"
        # The bombed session recovers too.
        assert output(server.execute(bombed, "print('alive')")) == "alive\n"
    finally:
        worker.join(120)
        server.delete(bombed)
        server.delete(healthy)
