"""lmc_runtime.budget.output.OutputBudget: the head streams live, the rest is withheld,
``finish()`` gives the marker and the tail, the spill file holds every byte, and
memory stays bounded however much is printed."""

from __future__ import annotations

from pathlib import Path

from lmc_runtime.budget.output import OutputBudget, Truncation


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def _run(budget: OutputBudget, pieces: list[str]) -> tuple[str, Truncation | None]:
    sent = "".join(budget.feed(piece) for piece in pieces)
    return sent, budget.finish()


def test_output_within_the_head_passes_through_live(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    budget = OutputBudget(100, spill, "run")
    pieces = ["a" * 10, "b\n" * 5, "é" * 10, "c" * 10]  # 50 bytes: exactly the head
    assert [budget.feed(p) for p in pieces] == pieces
    assert not budget.exceeded
    assert budget.finish() is None
    assert budget.path is None
    assert not spill.exists(), "no file is written while the output fits"


def test_over_the_limit_head_is_sent_rest_withheld_tail_at_finish(tmp_path: Path) -> None:
    budget = OutputBudget(100, tmp_path, "run")
    lines = [f"line {i:03d}\n" for i in range(100)]  # 9 bytes each, 900 in all
    whole = "".join(lines)
    returned = [budget.feed(line) for line in lines]
    assert "".join(returned) == whole[:45], "five whole lines of the 50 bytes"
    assert all(r == "" for r in returned[6:]), "nothing is sent once the head is full"
    assert budget.exceeded

    truncation = budget.finish()
    assert truncation is not None
    assert truncation.total == 900
    assert truncation.omitted == 801
    assert truncation.path == budget.path
    assert truncation.path.parent == tmp_path
    assert truncation.path.name.startswith("run-")
    assert truncation.text.startswith(
        "\n[... 801 bytes omitted; the whole output (900 bytes) "
        f"is saved in {truncation.path} ...]\n"
    )
    assert "bytes omitted" in truncation.text
    assert truncation.text.endswith("...]\n" + whole[-54:]), "six whole lines of the 55"
    assert truncation.path.read_bytes() == whole.encode()


def test_one_large_write_is_cut_at_the_head_limit(tmp_path: Path) -> None:
    budget = OutputBudget(10, tmp_path, "big")
    whole = "0123456789" * 10
    assert budget.feed(whole) == "01234"
    truncation = budget.finish()
    assert truncation is not None
    assert truncation.text.endswith("56789")
    assert truncation.omitted == 90
    assert truncation.path.read_text() == whole


def test_a_cut_head_and_tail_end_and_start_at_a_line_boundary_when_one_is_near(
    tmp_path: Path,
) -> None:
    """Truncated output is cut between lines when a line ends near the cut."""
    lines = [f"line {i:04d} of the output\n" for i in range(400)]  # 24 bytes each
    whole = "".join(lines)
    budget = OutputBudget(2000, tmp_path, "lines")
    sent, truncation = _run(budget, lines)
    assert truncation is not None
    tail = truncation.text.split("...]\n", 1)[1]
    assert sent.endswith("\n") and whole.startswith(sent)
    assert 1000 - 100 <= _utf8(sent) <= 1000, "within 10% of the head's size"
    assert tail.startswith("line ") and whole.endswith(tail)
    assert _utf8(sent) + truncation.omitted + _utf8(tail) == truncation.total


def test_a_cut_in_one_large_write_also_falls_between_lines(tmp_path: Path) -> None:
    """The line boundary is looked for inside a piece, not only between pieces."""
    whole = "".join(f"{i:010d}\n" for i in range(1000))  # 11,000 bytes in one write
    budget = OutputBudget(4000, tmp_path, "block")
    sent = budget.feed(whole)
    truncation = budget.finish()
    assert truncation is not None
    tail = truncation.text.split("...]\n", 1)[1]
    assert sent == whole[: 181 * 11], "the last whole line within the head's 2000 bytes"
    assert whole.endswith(tail) and len(tail) % 11 == 0 and len(tail) > 1800


def test_a_line_longer_than_the_slack_is_cut_where_it_must(tmp_path: Path) -> None:
    """With no line end near the cut, the head and tail keep every byte they may."""
    whole = "ab\n" + "x" * 4000 + "\nyz"
    budget = OutputBudget(2000, tmp_path, "long")
    sent, truncation = _run(budget, [whole])
    assert truncation is not None
    assert sent == whole[:1000]
    assert truncation.text.endswith(whole[-1000:])


def test_saved_file_holds_the_whole_output_byte_for_byte(tmp_path: Path) -> None:
    pieces = ["plain\n", "tabs\tand\r\ncrlf\r\n", "日本語 ", "🙂" * 50, "\x00\x1b[31mred", "end"]
    budget = OutputBudget(32, tmp_path, "bytes")
    _, truncation = _run(budget, pieces)
    assert truncation is not None
    whole = "".join(pieces)
    assert truncation.path.read_bytes() == whole.encode("utf-8")
    assert truncation.total == _utf8(whole)


def test_non_ascii_head_and_tail_are_whole_characters_within_budget(tmp_path: Path) -> None:
    pieces = ["héllo ", "wörld ", "日本語テキスト", "🙂" * 10, "end"]
    whole = "".join(pieces)
    budget = OutputBudget(20, tmp_path, "utf8")
    sent, truncation = _run(budget, pieces)
    assert truncation is not None
    assert whole.startswith(sent)
    assert _utf8(sent) <= 10
    assert sent == "héllo wö", "the head is the longest prefix within 10 bytes"
    tail = truncation.text.split("...]\n", 1)[1]
    assert whole.endswith(tail)
    assert _utf8(tail) <= 10
    assert truncation.total == _utf8(whole)
    assert _utf8(sent) + truncation.omitted + _utf8(tail) == truncation.total


def test_non_ascii_tail_keeps_the_longest_suffix_within_budget(tmp_path: Path) -> None:
    budget = OutputBudget(20, tmp_path, "utf8")
    _, truncation = _run(budget, ["héllo ", "wörld ", "日本語テキスト", "🙂" * 10, "end"])
    assert truncation is not None
    assert truncation.text.endswith("...]\n🙂end")


def test_non_ascii_head_keeps_the_longest_prefix_within_budget(tmp_path: Path) -> None:
    budget = OutputBudget(10, tmp_path, "utf8")
    assert budget.feed("日本語テキスト") == "日"  # 3 of the 5 head bytes
    truncation = budget.finish()
    # The tail may use what the head left: 10 - 3 = 7 bytes, so two whole characters.
    assert truncation is not None and truncation.text.endswith("...]\nスト")
    assert truncation.omitted == 21 - 3 - 6


def test_output_within_the_limit_is_delivered_without_an_omission_marker(tmp_path: Path) -> None:
    budget = OutputBudget(100, tmp_path, "run")
    whole = "x" * 60
    sent, truncation = _run(budget, [whole])
    delivered = sent + (truncation.text if truncation else "")
    assert delivered == whole


def test_memory_stays_bounded_over_200k_lines(tmp_path: Path) -> None:
    limit = 1000
    budget = OutputBudget(limit, tmp_path, "flood")
    largest = 0
    total = 0
    for i in range(200_000):
        line = f"{i}\n"
        total += len(line)
        budget.feed(line)
        if i % 1000 == 0:
            largest = max(largest, budget.held)
    assert largest < 2 * limit
    assert budget.held == sum(_utf8(text) for text in budget._tail.texts()) < 2 * limit
    truncation = budget.finish()
    assert truncation is not None
    assert truncation.total == total
    assert truncation.path.stat().st_size == total
    assert truncation.text.endswith("199999\n")


def test_memory_stays_bounded_for_one_huge_write(tmp_path: Path) -> None:
    budget = OutputBudget(100, tmp_path, "huge")
    budget.feed("a" * 5_000_000)
    assert budget.held < 2 * 100
    truncation = budget.finish()
    assert truncation is not None
    assert truncation.path.stat().st_size == 5_000_000


def test_spill_file_is_capped_so_a_flood_cannot_fill_the_disk(tmp_path: Path) -> None:
    """Regression: printing 1 GB used to write a 1 GB spill file on the host."""
    budget = OutputBudget(100, tmp_path, "flood", spill_limit=1000)
    pieces = [f"{i:09d}\n" for i in range(10_000)]  # 100,000 bytes
    _sent, truncation = _run(budget, pieces)
    assert truncation is not None and budget.path is not None
    saved = budget.path.read_text()
    assert len(saved) == 1000 and saved == "".join(pieces)[:1000]
    assert "its first 1000 bytes are saved in" in truncation.text
    assert truncation.text.endswith(pieces[-1]), "the tail still ends with the last output"
    assert truncation.total == 100_000
