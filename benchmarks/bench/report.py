"""A :class:`BenchReport` as a plain-text table."""

from __future__ import annotations

import math

from .model import BenchReport, Figure, FlatMemory

__all__ = ["format_figures", "format_memory", "format_report"]

_HEADERS = ("figure", "ours", "raw / baseline", "ratio", "target", "result")


def _number(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    if unit == "lines/s":
        return f"{value:,.0f} {unit}"
    if unit == "MiB":
        return f"{value:,.1f} {unit}"
    if unit == "ms" and value >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:.2f} {unit}"


def _ratio(figure: Figure) -> str:
    if figure.ratio is None:
        return "-"
    if not math.isfinite(figure.ratio):
        return "n/a"
    if figure.ratio_style == "%":
        return f"{figure.ratio:+.1f}%"
    return f"{figure.ratio:.2f}x"


def _result(figure: Figure) -> str:
    if figure.passed is None:
        return "info"
    verdict = "PASS" if figure.passed else "FAIL"
    return f"{verdict} (info)" if figure.informational else verdict


def _row(figure: Figure) -> tuple[str, ...]:
    baseline = "-"
    if figure.baseline is not None:
        baseline = _number(figure.baseline, figure.unit)
        if figure.baseline_label != "raw":
            baseline += f" ({figure.baseline_label})"
    return (
        figure.name,
        _number(figure.ours, figure.unit),
        baseline,
        _ratio(figure),
        figure.target or "-",
        _result(figure),
    )


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = {1, 2, 3}

    def line(row: tuple[str, ...]) -> str:
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return [line(rows[0]), rule, *(line(r) for r in rows[1:])]


def _memory_runs(flat: FlatMemory) -> list[str]:
    """Every memory run's growth, the medians and the verdict."""
    lines = [f"flat memory, RSS growth of this process per run ({flat.method}), MiB:"]
    for growth in (flat.small, flat.large):
        runs = ", ".join(f"{kib / 1024:.1f}" for kib in growth.growth_kib)
        lines.append(f"  {growth.lines:>12,} lines: {runs} (median {growth.median_kib / 1024:.1f})")
    verdict = "PASS" if flat.passed else "FAIL"
    lines.append(
        f"  {flat.large.label} - {flat.small.label}: {flat.extra_mib:+.1f} MiB "
        f"(bound +{flat.max_extra_mib:g} MiB) -> {verdict}"
    )
    return lines


def format_memory(flat: FlatMemory, notes: list[str]) -> str:
    """The flat-memory figure alone, as text."""
    lines = [*_table([_HEADERS, _row(flat.figure())]), "", *_memory_runs(flat)]
    if notes:
        lines += ["", "notes:", *(f"- {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def format_figures(figures: list[Figure], notes: list[str]) -> str:
    """Some rows of the report alone, as text, with their notes."""
    lines = _table([_HEADERS, *(_row(f) for f in figures)]) if figures else []
    if notes:
        lines += ["", "notes:", *(f"- {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def format_report(report: BenchReport) -> str:
    """The report as text: a header, the figures table, the verdict and any notes."""
    mode = "quick" if report.quick else "full"
    env = ", ".join(f"{k} {v}" for k, v in report.environment.items())
    lines = [
        f"lmc-runtime benchmark ({mode}: {report.repeat} warm round trips each; "
        f"took {report.duration_s:.0f} s)",
    ]
    if env:
        lines.append(env)
    lines.append("")
    figures = report.figures()
    lines += _table([_HEADERS, *(_row(f) for f in figures)])
    hard = [f for f in figures if f.passed is not None and not f.informational]
    met = sum(1 for f in hard if f.passed)
    lines += [
        "",
        f"targets met: {met}/{len(hard)} -> {'PASS' if report.passed else 'FAIL'}",
        "ratio = ours / baseline; the round-trip target applies to the async core (arun); "
        "'info' rows have no hard target.",
        "",
        *_memory_runs(report.flat_memory),
    ]
    if report.notes:
        lines += ["", "notes:", *(f"- {note}" for note in report.notes)]
    return "\n".join(lines) + "\n"
