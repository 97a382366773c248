"""Python, on ipykernel with the startup code in ``kernels/lmc-python``."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from .jupyter.backend import JupyterBackend, probe
from .jupyter.branching import CheckpointingSession
from .jupyter.execution import PythonExecution
from .jupyter.gateway.rest import Gateway
from .jupyter.gateway.startup import python_startup

__all__ = ["PythonBackend"]


class PythonBackend(JupyterBackend):
    """ipykernel in the runtime's own interpreter, or in ``python``: a path (it has a
    ``/`` or starts with ``~``), such as a venv's ``bin/python``, or else the name of
    an installed kernelspec, whose interpreter is used. It needs ipykernel. With a
    ``gateway``, kernels are the gateway's Python kernels instead."""

    kernel_name = "lmc-python"
    execution = PythonExecution
    session = CheckpointingSession
    announces_input = True
    gateway_language = "python"
    #: The kernel's IOPub has no send mark (``lmc_lean.iopub_unbounded``): what the
    #: host has not read past these messages waits in the kernel, in its sandbox.
    #: Not fewer: what waits in the kernel is lost with it when it dies (an
    #: out-of-memory kill), and its last output is what its caller needs most. At 8,
    #: the output printed just before such a kill was lost in 3 of 6 runs.
    iopub_mark = 64

    def __init__(self, python: str | None = None, *, gateway: Gateway | None = None) -> None:
        self.python = python
        self.gateway = gateway

    def program(self) -> str | None:
        python = self.python
        if python is None:
            return None
        if "/" in python or python.startswith("~"):
            return os.path.abspath(os.path.expanduser(python))
        try:
            argv0 = str(KernelSpecManager().get_kernel_spec(python).argv[0])
        except NoSuchKernel:
            return None
        return shutil.which(argv0) or argv0

    def requirement(self) -> str | None:
        if self.python is None:
            if importlib.util.find_spec("ipykernel") is None:
                return "ipykernel is not installed: pip install ipykernel"
            return None
        python = self.program()
        if python is None:
            return f"no kernelspec is named {self.python!r} (`jupyter kernelspec list`)"
        install = f"{python} has no ipykernel: run {python} -m pip install ipykernel"
        return probe([python, "-c", "import ipykernel"], install)

    def kernel_env(self) -> dict[str, str]:
        return {
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "PYTHONUNBUFFERED": "1",
        }

    def gateway_startup(self, env: Mapping[str, str]) -> str:
        return python_startup({**self.kernel_env(), **env})
