"""A SIGINT meant for a stopped run never interrupts the next run (JavaScript, TypeScript).

Node's breakOnSigint takes a SIGINT on a helper thread; when the statement it landed in
ends before that thread wakes (a busy host, or a signal just as the statement ends), node
holds it and terminates the next statement that runs with breakOnSigint, in whatever run
(see ``kernels/lmc-node/sigint.js``). The host signals a run only after asking the runner
to stop it by name, as it does at a timeout; here the run signals itself just before its
statement ends, which leaves such a held SIGINT nearly every time.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends.registry import Registry
from tests.integration.conftest import run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]

_TYPESCRIPT = Registry().availability("typescript")

#: The SIGINT lands in the statement, which ends at once: its await is not breakOnSigint's.
SIGNALLED = (
    'await new Promise((r) => { process.kill(process.pid, "SIGINT"); setTimeout(r, 60000) })'
)
#: Long enough for node's helper thread to wake while it runs, and hand it a held SIGINT.
NEXT = '{ const t = Date.now(); while (Date.now() - t < 200) {} }\nconsole.log("next ran")'
ROUNDS = 5


@pytest.fixture
def computer() -> Iterator[Computer]:
    with Computer(timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c


@pytest.mark.parametrize(
    "language",
    [
        "javascript",
        pytest.param(
            "typescript",
            marks=pytest.mark.skipif(
                not _TYPESCRIPT.available, reason=f"no TypeScript: {_TYPESCRIPT.reason}"
            ),
        ),
    ],
)
def test_a_sigint_held_by_a_stopped_run_does_not_interrupt_the_next(
    computer: Computer, language: str
) -> None:
    for round_ in range(ROUNDS):
        stopped = run(computer, SIGNALLED, language, timeout=0.5)
        # Nearly always stopped by name at its timeout; when node's thread woke in time,
        # the signal ended the statement itself.
        assert stopped.status in ("timeout", "interrupted"), (round_, stopped.messages)
        after = run(computer, NEXT, language, timeout=30)
        assert after.status == "ok", (round_, after.messages)
        assert after.output == "next ran\n", (round_, after.messages)
