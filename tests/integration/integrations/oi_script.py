"""Runs in a virtualenv with Open Interpreter: drives OI on lmc-runtime through
``use_lmc`` and writes what OI returned, as JSON, to the path in argv[1]. With a
URL in argv[2], OI runs on that ``lmc serve`` (the token in ``$LMC_TOKEN``);
else on a local Computer.

Everything goes through OI's own API (``interpreter.computer.run``, ``stop``,
``terminate``, ``interpreter.chat``); the test asserts on the JSON.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["DISABLE_TELEMETRY"] = "true"

from interpreter import OpenInterpreter, interpreter

from lmc_runtime.integrations.open_interpreter import use_lmc

Chunks = list[dict[str, Any]]

PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()"


def run(language: str, code: str, stream: bool = False) -> Chunks:
    result = interpreter.computer.run(language, code, stream=stream)
    return list(result)


def runs() -> dict[str, Chunks]:
    """OI's ``computer.run`` in each language, returned and streamed."""
    return {
        "python": run("python", "x = 6\nprint(x * 7)"),
        "python_stream": run(
            "python", "import time\nprint('a', flush=True)\ntime.sleep(0.3)\nprint('b')", True
        ),
        "python_state": run("python", "print(x)"),
        "python_error": run("python", "1 / 0"),
        "python_plot": run("python", PLOT),
        "shell": run("shell", "cd /tmp\necho one\nsleep 0.2\necho two", True),
        "bash_state": run("bash", "pwd"),
        "shell_error": run("shell", "ls /no/such/dir"),
        "javascript": run(
            "javascript",
            "let y = 20\nawait new Promise(r => setTimeout(r, 200))\nconsole.log(y + 1)",
            True,
        ),
        "javascript_state": run("javascript", "console.log(y * 2)"),
        "javascript_error": run("javascript", "throw new Error('boom')"),
    }


LOOP = "import time\nprint('looping', flush=True)\nwhile True:\n    time.sleep(0.05)"


def interrupted(oi: Any, stop: Any) -> tuple[Chunks, bool]:
    """Stream an endless loop through ``oi.computer.run``; once it printed, call
    ``stop()`` from this thread. The chunks, and whether the run ended."""
    started = threading.Event()
    chunks: Chunks = []

    def consume() -> None:
        for chunk in oi.computer.run("python", LOOP, stream=True):
            chunks.append(chunk)
            if chunk.get("content") == "looping\n":
                started.set()

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    assert started.wait(60), f"the loop never printed: {chunks}"
    stop()
    thread.join(60)
    return chunks, not thread.is_alive()


def stopped(computer: Any) -> dict[str, Any]:
    """``computer.stop()`` from another thread while a loop runs, then a run
    that reads the state; the same with an async OI's ``stop_event``; leaving a
    stream early; ``terminate()`` of every language, one the computer lacks too."""
    interpreter.computer.run("python", "kept = 'yes'")
    chunks, returned = interrupted(interpreter, interpreter.computer.stop)
    after_stop = run("python", "print(kept)")
    # OI's AsyncInterpreter is an OpenInterpreter with a stop_event (its server
    # needs OI's [server] extra): an OpenInterpreter given one stands for it.
    other = OpenInterpreter()
    other.stop_event = threading.Event()
    use_lmc(other, computer)
    event_chunks, event_returned = interrupted(other, other.stop_event.set)
    stream = interpreter.computer.run("shell", "echo first\nsleep 30\necho never", stream=True)
    left = next(chunk for chunk in stream if chunk.get("format") == "output")
    stream.close()
    after_leaving = run("shell", "echo again")
    # Not a language of the remote session: it answers why; terminate() ends it too.
    typescript = run("typescript", "console.log(1)")
    interpreter.computer.terminate()
    after_terminate = run("python", "print('kept' in globals())")
    return {
        "stop_chunks": chunks,
        "stop_returned": returned,
        "after_stop": after_stop,
        "stop_event_chunks": event_chunks,
        "stop_event_returned": event_returned,
        "left_at": left,
        "after_leaving": after_leaving,
        "typescript": typescript,
        "after_terminate": after_terminate,
    }


def scripted(replies: list[str]) -> Any:
    """An LLM for ``interpreter.llm.completions``: each call streams the next of
    ``replies`` token by token, as litellm's streamed chunks."""
    pending = iter(replies)
    calls: list[Any] = []

    def completions(**params: Any) -> Iterator[dict[str, Any]]:
        calls.append(params["messages"])
        for token in next(pending).split("|"):
            yield {"choices": [{"delta": {"content": token}}]}

    completions.calls = calls  # type: ignore[attr-defined]
    return completions


def chats() -> dict[str, Any]:
    """Two chat turns with a scripted model: each writes one code block, then answers."""
    interpreter.auto_run = True
    interpreter.offline = True
    interpreter.disable_telemetry = True
    interpreter.conversation_history = False
    interpreter.llm.model = "scripted"
    interpreter.llm.supports_functions = False
    interpreter.llm.supports_vision = False
    interpreter.llm.context_window = 8000
    interpreter.llm.max_tokens = 1000
    interpreter.messages = []
    interpreter.llm.completions = scripted(
        ["Let me compute.\n|```|python\n|print(6 * 7)\n|```", "The answer is 42."]
    )
    returned = interpreter.chat("What is 6 times 7?", display=False, stream=False)
    completions = scripted(["Listing.\n|```|shell\n|echo hello-oi\n|```", "Done."])
    interpreter.llm.completions = completions
    # OI keeps adding to the chunk it stored as a message: copy each as it comes.
    streamed = [dict(c) for c in interpreter.chat("Echo something.", display=False, stream=True)]
    return {
        "returned": returned,
        "streamed": streamed,
        "llm_saw": json.dumps(completions.calls[-1]),
    }


def main() -> None:
    url = sys.argv[2] if len(sys.argv) > 2 else None
    computer = use_lmc(interpreter, url=url)
    result: dict[str, Any] = {"computer": type(computer).__name__}
    result["runs"] = runs()
    result["stop"] = stopped(computer)
    result["chat"] = chats()
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
