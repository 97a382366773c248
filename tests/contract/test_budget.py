"""A flood past the output budget is cut to its head and tail, saved whole, and ends once."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime import Limits

from .harness import ComputerFactory, assert_ends_once, run
from .languages import Profile

BUDGET = 2000
LINES = 20_000


@pytest.mark.local_only("the whole output is saved under a host spill_dir given to Computer")
def test_a_flood_is_truncated_with_a_notice_and_saved_whole(
    lang: Profile, make_computer: ComputerFactory, tmp_path: Path
) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    computer = make_computer(limits=Limits(output_bytes=BUDGET, spill_dir=spill))
    result = run(computer, lang, lang.count_lines(LINES))
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    cut = [m for m in result.outputs if m.status == "truncated"]
    assert len(cut) == 1, result.describe()
    text = result.text
    assert "bytes omitted" in text
    assert len(text.encode()) < BUDGET + 300, f"{len(text.encode())} bytes delivered"
    assert text.startswith("line 0\nline 1\n"), text[:200]
    assert text.endswith(f"line {LINES - 2}\nline {LINES - 1}\n"), text[-200:]
    saved = Path((cut[0].extras or {})["output_path"])
    assert saved.parent == spill
    assert saved.read_text() == "".join(f"line {i}\n" for i in range(LINES))
    after = run(computer, lang, lang.print_line("next"))
    assert after.status == "ok" and after.output == "next\n", after.describe()
