"""Output printed after its run ended comes first in the next run, marked late."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime import Computer

from .harness import assert_ends_once, run, wait_for
from .languages import Profile


@pytest.mark.local_only("the code signals through a file at a host path, out of a sandbox's sight")
def test_late_output_comes_with_the_next_run_tagged_with_its_own_run(
    lang: Profile, computer: Computer, tmp_path: Path
) -> None:
    done = tmp_path / "late.done"
    first = run(computer, lang, lang.late_output(str(done)))
    assert_ends_once(first)
    assert first.status == "ok", first.describe()
    assert "late-line" not in first.text, "the run waited for its background work"
    # The background work prints once the run has ended (not after a time, which a
    # slow run could outlast), then creates the file 0.2 s after printing: by then
    # the line has been read.
    Path(f"{done}.go").touch()
    wait_for(done.exists, "the background work")
    second = run(computer, lang, lang.print_line("now"))
    assert_ends_once(second)
    assert second.status == "ok", second.describe()
    late = second.late
    assert late, f"the late output was not delivered:\n{second.describe()}"
    assert "late-line\n" in "".join(str(m.content) for m in late), second.describe()
    assert all(m.in_reply_to == first.reply_to for m in late), second.describe()
    last_late = max(second.messages.index(m) for m in late)
    assert all(second.messages.index(m) > last_late for m in second.outputs), (
        f"late output came after this run's own output:\n{second.describe()}"
    )
    assert "late-line" not in second.output, second.describe()
    assert second.output.endswith("now\n"), second.describe()
