"""The files a gateway's kernel is sent are the kernel's whole startup code."""

from __future__ import annotations

from lmc_runtime.backends.jupyter.gateway import startup
from lmc_runtime.backends.kernelspecs import kernels_dir


def test_regression_every_startup_module_is_sent_to_a_gateway_kernel() -> None:
    """Guards lmc_checkpoint.py missing from the files sent: lmc_startup.py imports
    every module beside it, and on a gateway each run failed with FileNotFoundError."""
    beside = {path.name for path in (kernels_dir() / "lmc-python").glob("lmc_*.py")}
    beside.discard("lmc_kernel.py")  # the local kernel's entry point, not startup code
    beside.discard("lmc_pipes.py")  # loaded by that entry point only
    beside.discard("lmc_shell.py")  # by it and by a revived kernel: never on a gateway
    assert beside == set(startup._PYTHON_FILES)
