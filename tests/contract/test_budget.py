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


#: Code showing ``n`` HTML displays of about 1 KB, then printing ``done``, in the
#: languages whose displays become LMC messages (those on Jupyter kernels).
DISPLAYS = {
    "python": lambda n: (
        "from IPython.display import HTML, display\n"
        f"for i in range({n}):\n"
        "    display(HTML('<p>' + 'h' * 1000 + '</p>'))\n"
        "print('done')"
    ),
    "r": lambda n: (
        f"for (i in 1:{n}) IRdisplay::display_html(paste0('<p>', strrep('h', 1000), '</p>'))\n"
        "cat('done\\n')"
    ),
}


@pytest.mark.local_only("the budget is a Computer option the service sets for itself")
def test_displays_are_charged_and_those_past_the_budget_left_out_with_a_notice(
    lang: Profile, make_computer: ComputerFactory, tmp_path: Path
) -> None:
    """Regression: displays were not counted, so a flood of HTML came back whole
    (400 MB under a 64K budget). Now they share the budget with the text: those
    that no longer fit are left out, and one notice says how many."""
    if lang.name not in DISPLAYS:
        pytest.skip(f"{lang.name} has no displays")
    count = 40
    computer = make_computer(limits=Limits(output_bytes=4 * BUDGET, spill_dir=tmp_path))
    result = run(computer, lang, DISPLAYS[lang.name](count))
    assert_ends_once(result)
    assert result.status == "ok", result.describe()
    shown = [m for m in result.messages if m.type == "code"]
    assert 0 < len(shown) < count, result.describe()
    left_out = [m for m in result.outputs if (m.extras or {}).get("omitted_displays")]
    assert len(left_out) == 1 and left_out[0].status == "truncated", result.describe()
    assert (left_out[0].extras or {})["omitted_displays"] == count - len(shown)
    returned = sum(len(str(m.content or "").encode()) + 64 for m in result.messages)
    assert returned < 4 * BUDGET + 1000, f"{returned} bytes returned"
    assert result.output.endswith("done\n"), result.describe()
