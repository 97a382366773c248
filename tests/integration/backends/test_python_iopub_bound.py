"""A Python run that floods IOPub while its caller reads nothing does not grow the
host: what the caller has not read waits in the kernel, and all of it arrives.

The run's route holds items up to a size (:class:`lmc_runtime.backends.core.route.Route`),
and the host's IOPub socket has a receive high-water mark for the Python kernel,
whose IOPub has no send mark: past both, the kernel keeps what it sends.
Regression: neither was bounded, and a flood the caller did not read grew the
host by 32 MiB a second in messages of 1 KB (in the ZMQ socket's queue) and by
90 MiB a second in ipykernel's 10 MiB messages of a ``print`` loop (in the route).
The kernel now sends a stream's text in messages of about 1 MiB at most, so the
few messages the host holds are small (``kernels/lmc-python/lmc_pipes.py``).
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from lmc_runtime import Computer, Limits, Timeouts

pytestmark = pytest.mark.integration

#: The flood: messages of 64 KiB, 192 MiB in all.
CHUNK, CHUNKS = 64 * 1024, 3072
#: How much the host may grow while the flood waits to be read.
GROWTH = 48 * 1024 * 1024
#: Bounds the run and every wait: only a hang comes near it.
GUARD = 120.0


def _flood(marker: Path) -> str:
    return (
        "import sys\n"
        f"chunk = 'x' * {CHUNK - 1} + '\\n'\n"
        f"for _ in range({CHUNKS}):\n"
        "    sys.stdout.write(chunk)\n"
        "    sys.stdout.flush()\n"
        f"open({str(marker)!r}, 'w').close()\n"
        "print('END')\n"
    )


def _rss() -> int:
    return int(psutil.Process().memory_info().rss)


def _wait_for(path: Path) -> None:
    """Until ``path`` exists (bounded; the kernel makes it once it has sent all)."""
    deadline = time.monotonic() + GUARD
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} was not made within {GUARD:g} s"
        time.sleep(0.05)


def test_a_flood_the_caller_does_not_read_waits_in_the_kernel(tmp_path: Path) -> None:
    marker = tmp_path / "sent"
    timeouts = Timeouts(execution=GUARD)
    with Computer(timeouts=timeouts, limits=Limits(output_bytes=100_000)) as computer:
        assert [m.extras for m in computer.run("python", "1")][-1]["status"] == "ok"
        before = _rss()
        stream = computer.run("python", _flood(marker), timeout=GUARD)
        first = next(stream)  # the run has begun; its caller now reads nothing
        _wait_for(marker)
        grown = _rss() - before
        messages = [first, *stream]
    assert grown < GROWTH, f"the host grew by {grown / 2**20:.0f} MiB"
    final = messages[-1].extras or {}
    assert final.get("status") == "ok", messages[-3:]
    cut = [m for m in messages if (m.extras or {}).get("total_bytes")]
    assert len(cut) == 1 and cut[0].extras is not None
    assert cut[0].extras["total_bytes"] == CHUNK * CHUNKS + len("END\n")  # all of it arrived


#: Records the longest text of a stream message the kernel sends.
_RECORD_STREAM_MESSAGES = """\
def _record(kernel=get_ipython().kernel):
    send = kernel.session.send

    def sent(stream, msg_or_type, content=None, *args, **kwargs):
        if isinstance(msg_or_type, dict) and msg_or_type.get("msg_type") == "stream":
            text = msg_or_type["content"]["text"]
            kernel.lmc_longest = max(getattr(kernel, "lmc_longest", 0), len(text))
        return send(stream, msg_or_type, content, *args, **kwargs)

    kernel.session.send = sent

_record()
del _record
"""
#: A ``print`` loop, 32 MiB in all: ipykernel sent what 0.2 s of it printed as one message.
_PRINT_LOOP = "for _ in range(32 * 1024):\n    print('x' * 1023)"
#: The text a stream holds before it sends it (``lmc_pipes.MESSAGE_TEXT``).
MESSAGE_TEXT = 1 << 20


def test_a_print_loop_is_sent_in_messages_of_about_a_mebibyte_at_most() -> None:
    """Regression: the host reads a message whole, and holds a few at a time: a
    ``print`` loop's messages of 10 to 30 MiB made that 200 MiB (lmc_pipes.py)."""
    with Computer(timeouts=Timeouts(execution=GUARD), limits=Limits(output_bytes=10_000)) as c:
        assert [m.extras for m in c.run("python", _RECORD_STREAM_MESSAGES)][-1]["status"] == "ok"
        assert [m.extras for m in c.run("python", _PRINT_LOOP)][-1]["status"] == "ok"
        said = "".join(
            str(m.content)
            for m in c.run("python", "print(get_ipython().kernel.lmc_longest)")
            if m.format == "output"
        )
    # The stream counts its text roughly, across its writer and its sending thread:
    # on a loaded host a message has come at 1.12 MiB. The old code's were 9 MiB.
    assert 0 < int(said) <= 2 * MESSAGE_TEXT
