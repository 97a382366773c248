"""lmc bench's density section: PSS of a real process tree, and its figures' table."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from benchmarks.bench import command, pss
from benchmarks.bench.density_figures import (
    DensityAt,
    DensityFigures,
    KindFigure,
    Starts,
    format_density,
)

#: A child that writes 32 MiB of its own, says so, and waits for its stdin to close.
_DIRTY_CHILD = """
import mmap, sys
block = mmap.mmap(-1, 32 << 20)
for offset in range(0, len(block), mmap.PAGESIZE):
    block[offset] = 1
print("ready", flush=True)
sys.stdin.read()
"""

pytestmark = pytest.mark.skipif(
    not os.path.exists(f"/proc/{os.getpid()}/smaps_rollup"), reason="needs /proc/PID/smaps_rollup"
)


@pytest.fixture
def dirty_child() -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", _DIRTY_CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        assert child.stdout.readline() == "ready\n"
        yield child
    finally:
        child.stdin.close()
        child.wait(30)


def test_a_tree_counts_each_process_with_the_pages_it_wrote(
    dirty_child: subprocess.Popen[str],
) -> None:
    """Guards the sum: a child's 32 MiB of written pages are in its PSS and its
    Private_Dirty, and the tree holds this process (the server) and the child."""
    tree = {p.pid: p for p in pss.tree_memory(os.getpid())}
    assert tree[os.getpid()].kind == "server"
    child = tree[dirty_child.pid]
    assert child.private_dirty >= 32 << 10
    assert 32 << 10 <= child.pss <= child.rss
    kinds = pss.by_kind(tree.values())
    assert kinds[child.kind].private_dirty >= child.private_dirty


def test_a_process_that_ended_counts_nothing() -> None:
    """Guards the race: a pid gone between the listing and the read is None."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    assert pss.memory_of(ended.pid, "x") is not None or ended.poll() is not None
    ended.wait(30)
    assert pss.memory_of(ended.pid, "x") is None


def test_the_cpu_of_a_tree_takes_in_its_reaped_children() -> None:
    """Guards cutime: CPU spent by a child this process has reaped is counted."""
    before = pss.cpu_seconds(os.getpid())
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass",
        ],
        check=True,
    )
    assert pss.cpu_seconds(os.getpid()) - before >= 0.25


def test_the_table_says_what_is_over_its_target() -> None:
    """Guards the verdicts: 30 MiB a session is over 12, a 50 ms cold start is not."""
    kinds = [KindFigure("forked kernel", 10, 19.9, 48.4, 18.5)]
    figures = DensityFigures(
        sandboxed=True,
        at=[
            DensityAt("lmc serve", 10, 30.0, 4.0, kinds),
            DensityAt("Jupyter Kernel Gateway", 10, 54.0, 24.0),
        ],
        cold=Starts.of("sequential, pool off", [0.04, 0.05, 0.06], 0.2, 0.3),
        burst=Starts.of("100 at once, pool of 1", [1.0, 2.0, 3.0], 3.1, 30.0),
    )
    text = format_density(figures)
    assert "N=10    30.00 MiB/session" in text and "682 in 20 GiB" in text
    assert "target <= 12: over" in text
    assert "p50 50 ms" in text and "CPU 100 ms a session" in text
    assert "p50 2000 ms" in text and "CPU 10000 ms" in text
    assert not figures.passed


def test_lmc_bench_takes_the_density_section(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards the wiring: ``lmc bench --only density`` parses, and its command runs
    the density section (here a stand-in) and prints its table."""
    from lmc_runtime.cli.parser import build_parser

    args = build_parser().parse_args(["bench", "--only", "density", "--quick"])
    figures = DensityFigures(sandboxed=False, notes=["stand-in"])
    calls: list[tuple[bool, bool]] = []

    def phase(*, quick: bool = False, large: bool = False) -> DensityFigures:
        calls.append((quick, large))
        return figures

    monkeypatch.setattr("benchmarks.bench.density.density_phase", phase)
    assert command.run(args) == 0
    assert calls == [(True, False)]
    assert "note: stand-in" in capsys.readouterr().out
    large = build_parser().parse_args(["bench", "--only", "density", "--large"])
    assert command.run(large) == 0
    assert calls[-1] == (False, True)  # N = 300 is asked for by --large


def test_a_gateway_that_gives_out_is_a_note_and_the_rest_is_still_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: at N = 300 Jupyter Kernel Gateway reset its WebSocket, and the
    exception lost every figure the section had measured."""
    from types import SimpleNamespace

    from benchmarks.bench import density

    def ours(counts: list[int], sandboxed: bool, figures: DensityFigures, *rest: object) -> None:
        figures.notes.append(f"ours at {counts}")

    def gateway(counts: list[int], figures: DensityFigures) -> None:
        raise ConnectionResetError("no close frame received or sent")

    unavailable = SimpleNamespace(availability=lambda language: SimpleNamespace(available=False))
    monkeypatch.setattr(density, "sandbox_available", lambda: SimpleNamespace(available=True))
    monkeypatch.setattr(density, "Registry", lambda: unavailable)
    monkeypatch.setattr(density, "_ours", ours)
    monkeypatch.setattr(density, "_burst", lambda count, sandboxed: None)
    monkeypatch.setattr(density, "_gateway", gateway)
    monkeypatch.setattr(density, "find_spec", lambda name: object())
    figures = density.density_phase(large=True)
    assert "ours at [10, 100, 300]" in figures.notes
    assert any("Jupyter Kernel Gateway failed" in note for note in figures.notes)
