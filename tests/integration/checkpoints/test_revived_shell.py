"""A kernel revived from a checkpoint (a rollback, a fork) serves the image's own
IPython shell, made the new kernel's (``lmc_shell.unhook`` and ``rebind``).

Regression: each revived kernel made a new shell around the image's namespace
(some 12 of its 38 ms of CPU), which dropped what the user had put on the shell
(event callbacks, magics, formatters) and its output history."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts

from ..conftest import run

#: The shell's hooks, as counts: lmc's must not pile up from one revival to the next.
COUNTS = (
    "import json\nip = get_ipython()\n"
    "print(json.dumps({'events': {k: len(v) for k, v in ip.events.callbacks.items()},"
    " 'transformers': len(ip.ast_transformers), 'marked': getattr(ip, 'marked', None),"
    " 'kernel': ip.kernel is not None and ip.kernel.shell is ip}))"
)


@pytest.fixture
def computer(tmp_path: Path) -> Iterator[Computer]:
    with Computer(cwd=tmp_path, timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c


def _counts(computer: Computer) -> dict[str, object]:
    result = run(computer, COUNTS)
    assert result.status == "ok", result.output
    return json.loads(result.output.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_users_shell_carries_over_and_lmcs_hooks_do_not_pile_up(computer: Computer) -> None:
    setup = (
        "calls = []\nip = get_ipython()\nip.marked = 'mine'\n"
        "ip.events.register('post_run_cell', lambda result: calls.append(1))\n"
        "from IPython.core.magic import register_line_magic\n"
        "@register_line_magic\ndef twice(line):\n    return 2 * int(line)\n"
    )
    assert run(computer, setup).status == "ok"
    assert run(computer, "41").status == "ok"
    before = _counts(computer)
    taken = computer.checkpoint()
    for _ in range(3):
        computer.rollback(taken)
    after = _counts(computer)
    assert after == before and after["marked"] == "mine" and after["kernel"] is True
    assert run(computer, "v = %twice 21\nprint(v)").output == "42\n"  # the user's magic
    assert run(computer, "n = len(calls)\nn").status == "ok"
    assert run(computer, "print(len(calls) > n, Out[2])").output == "True 41\n"
    fork = computer.fork()
    try:
        assert _counts(fork) == before
        assert run(fork, "v = %twice 4\nprint(v)").output == "8\n"
    finally:
        fork.close()


def test_a_revived_kernel_runs_script_magics_expressions_and_lines(computer: Computer) -> None:
    """The image's script magics ran on a loop in a thread the revived kernel does
    not have: a new one serves it (regression: ``%%bash`` hung)."""
    assert run(computer, "%%bash\necho before").output == "before\n"
    taken = computer.checkpoint()
    computer.rollback(taken)
    after = run(computer, "%%bash\necho after").output
    # The note says the script magics' thread was not carried; they run all the same.
    assert after.endswith("after\n") and "(run_forever)" in after
    shown = run(computer, "6 * 7")
    assert [m.content for m in shown.messages if m.type == "console" and m.content] == ["42"]
    assert run(computer, "%%bash --bg\nsleep 0.1").status == "ok"


def test_a_log_started_before_the_checkpoint_goes_on_after_a_rollback(
    computer: Computer, tmp_path: Path
) -> None:
    """The user's ``%logstart`` file belongs to the image's kernel: the revived one
    opens it again by name (``lmc_shell._log_reopened``) and logs what runs next
    into it, and the log stays active."""
    log = tmp_path / "session.log"
    assert run(computer, f"%logstart -o {log}").status == "ok"
    assert run(computer, "before = 1").status == "ok"
    taken = computer.checkpoint()
    computer.rollback(taken)
    result = run(computer, "after = 2\nprint(get_ipython().logger.log_active)")
    assert result.output == "True\n"
    assert run(computer, "get_ipython().logger.logfile.flush()").status == "ok"
    text = log.read_text(encoding="utf-8")
    assert "before = 1" in text and "after = 2" in text
    assert text.index("before = 1") < text.index("after = 2")
