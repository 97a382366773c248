"""An owner of interpreters, run as its own process by the lifetime tests.

``python owner.py LANGUAGE MODE``: opens a Computer, starts LANGUAGE, and prints
``PID <pid>`` with the interpreter's process id. Then, by MODE:

``end``
    returns without closing the Computer (the interpreter is idle).
``global``
    the same, with the Computer held by a module's global (a script's own variable).
``busy``
    leaves code running that ignores SIGHUP and SIGTERM where it can, and waits
    to be killed.
``drop``
    drops the Computer unclosed, collects garbage, prints ``DROPPED`` and waits
    until its stdin ends.

``python owner.py html render``: prints ``RENDERING`` and renders a page whose
script never ends, so that Chromium is busy when the owner is killed.
"""

from __future__ import annotations

import gc
import sys

from lmc_runtime import Computer

IDLE = {
    "python": "import os\nprint(os.getpid())",
    "r": "cat(Sys.getpid(), '\\n')",
    "shell": "echo $$",
    "javascript": "console.log(process.pid)",
    "java": "System.out.println(ProcessHandle.current().pid());",
}
BUSY = {
    "python": "import os, signal, threading\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
    "print(os.getpid(), flush=True)\nthreading.Event().wait()",
    "r": "cat(Sys.getpid(), '\\n')\nflush(stdout())\nrepeat Sys.sleep(600)",
    "shell": "trap '' HUP TERM\necho $$\nwhile :; do sleep 600; done",
    "javascript": "process.on('SIGHUP', () => {})\nconsole.log(process.pid)\nwhile (true) {}",
    "java": "System.out.println(ProcessHandle.current().pid());\nwhile (true) {}",
}


#: What a script's global keeps until the interpreter exits (``global``).
KEPT: list[Computer] = []
#: A page Chromium never finishes loading: its screenshot waits until it is killed.
ENDLESS = "<script>while (true) {}</script>"


def main(language: str, mode: str) -> None:
    computer = Computer()
    if mode == "render":
        print("RENDERING", flush=True)
        for _ in computer.run(language, ENDLESS, timeout=600):
            pass
        return
    code = (BUSY if mode == "busy" else IDLE)[language]
    for message in computer.run(language, code):
        text = message.content if isinstance(message.content, str) else ""
        if message.format == "output" and text.strip().isdigit():
            print("PID", text.strip(), flush=True)
            if mode == "busy":
                sys.stdin.read()  # killed meanwhile
    if mode == "global":
        KEPT.append(computer)
    if mode == "drop":
        del computer
        gc.collect()
        print("DROPPED", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
