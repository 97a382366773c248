"""The core contract, run again with the Linux-only paths forced off.

Every behaviour that waits for, signals or lists processes, or reads their
pipes, must hold where there is no pidfd and no ``/proc``: the final message,
output order, stops and the ladder, deaths and restarts. (The budget, late
output and per-execution environments touch none of that.) Input differs: a read
of a stdin FIFO cannot be seen there, so with a callback the shells and node
read end-of-input at once instead of waiting unseen (Python, R and Java see
their reads themselves and are answered as on Linux).
"""

from __future__ import annotations

from lmc_runtime import Computer

from ..contract.harness import ComputerFactory, assert_ends_once, run
from ..contract.languages import GOT, Profile
from ..contract.test_death import *  # noqa: F403
from ..contract.test_endings import *  # noqa: F403
from ..contract.test_output import *  # noqa: F403
from ..contract.test_stops import *  # noqa: F403

#: Languages whose interpreter reports its own reads (a Jupyter input request, the Java
#: runner's System.in): answered without /proc.
SEES_ITS_READS = ("python", "r", "java")


def test_input_is_answered_or_reads_end_of_input_at_once(
    lang: Profile, make_computer: ComputerFactory
) -> None:
    computer: Computer = make_computer(on_input=lambda prompt: "Ada")
    result = run(computer, lang, lang.read_line, timeout=10.0)
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    expected = GOT.format("Ada") if lang.name in SEES_ITS_READS else lang.at_end_of_input
    assert result.output.endswith(expected + "\n"), result.describe()
