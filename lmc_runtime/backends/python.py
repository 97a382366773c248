"""Python, on ipykernel with the startup code in ``kernels/lmc-python``."""

from __future__ import annotations

import importlib.util

from .base import Availability
from .jupyter.backend import JupyterBackend

__all__ = ["PythonBackend"]


class PythonBackend(JupyterBackend):
    """ipykernel running in the runtime's own interpreter."""

    kernel_name = "lmc-python"
    announces_input = True

    def availability(self) -> Availability:
        if importlib.util.find_spec("ipykernel") is None:
            return Availability.no("ipykernel is not installed: pip install ipykernel")
        return super().availability()

    def kernel_env(self) -> dict[str, str]:
        return {
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "PYTHONUNBUFFERED": "1",
        }
