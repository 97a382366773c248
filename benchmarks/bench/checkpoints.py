"""The checkpoint rows of the report: checkpoint, rollback and fork of a Python
interpreter holding 1 MB, 100 MB (and, unless quick, 1 GB) of state, against a
new Computer that re-runs the code that built it; and the private memory of an
unmodified checkpoint. Measured by :func:`benchmarks.checkpoints.measure`.

The issue's targets, at 100 MB, are shown with each row; the rows are
informational (a miss is reported, and does not fail the benchmark).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from ..checkpoints import measure
from .model import Figure

__all__ = ["CheckpointFigures", "checkpoints_phase", "missing_for_checkpoints"]

#: The issue's targets at 100 MB of state: milliseconds, and MiB of private memory.
TARGETS = {"checkpoint_ms": 50.0, "rollback_ms": 50.0, "fork_ms": 100.0, "private_mib": 10.0}
_TARGET_MB = 100


@dataclass(frozen=True)
class CheckpointFigures:
    """Each size's figures (as :func:`benchmarks.checkpoints.measure` gives them), by MB."""

    sizes: dict[int, dict[str, float]] = field(default_factory=dict)

    def figures(self) -> list[Figure]:
        rows: list[Figure] = []
        for mb, f in self.sizes.items():
            for key, name in (
                ("checkpoint_ms", "checkpoint"),
                ("rollback_ms", "rollback"),
                ("fork_ms", "fork"),
            ):
                ours, base = f[key], f["rebuild_ms"]
                target = TARGETS[key] if mb == _TARGET_MB else None
                rows.append(
                    Figure(
                        f"{name}_{mb}mb",
                        f"{name} of a Python interpreter holding {mb} MB, median",
                        "ms",
                        ours,
                        base,
                        "new Computer + re-run",
                        ours / base if base > 0 else float("inf"),
                        target=f"<= {target:g} ms" if target is not None else "",
                        passed=ours <= target if target is not None else None,
                        informational=True,
                    )
                )
            private = f["private_kib_each"] / 1024
            target = TARGETS["private_mib"] if mb == _TARGET_MB else None
            rows.append(
                Figure(
                    f"checkpoint_private_{mb}mb",
                    f"private memory of an unmodified checkpoint, {mb} MB of state",
                    "MiB",
                    private,
                    f["pss_kib_each"] / 1024,
                    "its PSS",
                    None,
                    target=f"<= {target:g} MiB" if target is not None else "",
                    passed=private <= target if target is not None else None,
                    informational=True,
                )
            )
        return rows


def missing_for_checkpoints() -> str | None:
    """Why the rows cannot be measured here, or None."""
    if importlib.util.find_spec("numpy") is None:
        return "checkpoints: skipped, the state is a numpy array and numpy is not installed"
    return None


def checkpoints_phase(*, quick: bool = False) -> CheckpointFigures:
    """The figures at 1 MB and 100 MB (and 1 GB unless ``quick``)."""
    sizes = (1, 100) if quick else (1, 100, 1000)
    repeat = 3 if quick else 5
    return CheckpointFigures({mb: measure(mb, repeat) for mb in sizes})
