"""The sandbox's stdlib-only scripts (run with ``python -I``), loaded by path
for their unit tests: they are not importable by name."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str) -> ModuleType:
    """The script at ``path`` as a module called ``name`` (not in sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
