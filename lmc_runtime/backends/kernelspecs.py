"""Where the files the runtime ships for its interpreters live (``kernels/``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["kernels_dir"]


def kernels_dir() -> Path:
    """The kernels folder: inside the wheel, or ``kernels/`` in a checkout."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "_kernels", package.parent / "kernels"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no kernels folder next to {package}")
