"""What a Python run's child processes write comes with the run, not after it.

ipykernel reads descriptors 1 and 2 (where child processes write) in a thread of
each stream, which writes what it read into the stream. The run could end, and
its reply go out, before that thread had read the pipe: the output then came as
the next run's (CI: ``echo`` from ``subprocess.run`` lost about 1 in 1,000 runs
on a loaded machine). The kernel's launcher makes a run's reply wait until what
its child processes left in the pipes was read (``kernels/lmc-python/lmc_pipes.py``).

The test holds that thread back for certain: its writes into stdout wait until
the kernel said it is idle after the run (what ends a run for the host), or half
a second, whichever comes first. A run whose reply does not wait for them loses
its output every time.
"""

from __future__ import annotations

import pytest

from lmc_runtime import Computer

from ..conftest import run

pytestmark = pytest.mark.integration

#: Every later run's stdout, as written by the pipe's thread, waits until the
#: kernel said it is idle after the run (at most half a second).
_HOLD_THE_PIPE_READER = """\
import sys, threading
from IPython import get_ipython

def _hold(kernel=get_ipython().kernel, write=sys.stdout.write):
    idle = threading.Event()
    send = kernel.session.send

    def sent(stream, msg_or_type, content=None, *args, **kwargs):
        done = send(stream, msg_or_type, content, *args, **kwargs)
        if msg_or_type == "status" and (content or {}).get("execution_state") == "idle":
            idle.set()
        return done

    def held(text):
        if threading.current_thread() is not threading.main_thread():
            idle.wait(0.5)
        return write(text)

    kernel.session.send, sys.stdout.write = sent, held
    get_ipython().events.register("pre_run_cell", lambda info=None: idle.clear())

_hold()
del _hold
"""

_CHILD_ECHOES = "import subprocess\n_ = subprocess.run(['sh', '-c', 'echo from-child'], check=True)"


def _pipes_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel reads descriptors 1 and 2: ipykernel leaves them alone when it sees
    ``PYTEST_CURRENT_TEST``, which pytest sets as each phase of a test begins."""
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)


def test_a_child_process_s_output_comes_with_its_run_though_read_late(
    computer: Computer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pipes_watched(monkeypatch)
    assert run(computer, _HOLD_THE_PIPE_READER).status == "ok"
    for _ in range(3):
        result = run(computer, _CHILD_ECHOES)
        assert result.status == "ok"
        assert result.output == "from-child\n", result.messages
