"""Embedding lmc-runtime in a sync agent loop: run code messages, print what comes back."""

from __future__ import annotations

from lmc_runtime import Computer, Timeouts


def main() -> None:
    with Computer(timeouts=Timeouts(execution=10)) as computer:
        message = {
            "role": "assistant",
            "type": "code",
            "format": "python",
            "content": "import time\nfor i in range(3):\n    print(i)\n    time.sleep(0.3)\n",
            "id": "msg-1",
        }
        for reply in computer.run(message):
            print(reply.to_dict())
        # A runaway loop is interrupted after 2 s; the session keeps its state.
        for reply in computer.run("python", "while True: pass", timeout=2):
            print(reply.format, reply.content)


if __name__ == "__main__":
    main()
