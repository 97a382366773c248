"""The Python kernel's own files (``kernels/lmc-python``), loaded as modules the
way the kernel loads them: by file name, each load a fresh module."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from lmc_runtime.backends.kernelspecs import kernels_dir


def kernel_module(name: str, alias: str = "") -> ModuleType:
    """``kernels/lmc-python/<name>.py`` as a new module (named ``_<name>_test``,
    or ``alias``), its code run."""
    path = kernels_dir() / "lmc-python" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(alias or f"_{name}_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
