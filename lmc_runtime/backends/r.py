"""R, on IRkernel with the startup code in ``kernels/lmc-r``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

from .jupyter.backend import JupyterBackend, probe
from .jupyter.execution import JupyterExecution
from .jupyter.gateway.rest import Gateway
from .jupyter.gateway.startup import r_startup

__all__ = ["IRKERNEL_MISSING", "R_MISSING", "RBackend"]

R_MISSING = "R is not installed: apt-get install r-base-core r-cran-irkernel"
IRKERNEL_MISSING = "IRkernel is not installed: apt-get install r-cran-irkernel"
_HAS_IRKERNEL = 'quit(status = !nzchar(system.file(package = "IRkernel")))'


class RExecution(JupyterExecution):
    """IRkernel waits for input in ``zmq.poll``, where R may not take an interrupt:
    stopping such a run also answers ``"\x04"`` (see ``kernels/lmc-r``)."""

    wakes_input_with_eof = True


class RBackend(JupyterBackend):
    """IRkernel in ``r``: the ``R`` found on ``path`` (the process's PATH by
    default), or the path of another R front end, which needs IRkernel. With a
    ``gateway``, kernels are the gateway's R kernels instead."""

    kernel_name = "lmc-r"
    execution = RExecution
    announces_input = True
    native_output = True
    gateway_language = "r"

    def __init__(
        self, r: str = "R", *, path: str | None = None, gateway: Gateway | None = None
    ) -> None:
        self.r = r
        self.path = path
        self.gateway = gateway

    def program(self) -> str | None:
        path = self.path if self.path is not None else os.environ.get("PATH", os.defpath)
        found = shutil.which(os.path.expanduser(self.r), path=path)
        return os.path.abspath(found) if found else None

    def requirement(self) -> str | None:
        r = self.program()
        if r is None:
            return R_MISSING if self.r == "R" else f"{self.r} is not an R that can be run"
        own = f"{r} has no IRkernel: run {r} -e 'install.packages(\"IRkernel\")'"
        return probe(
            [r, "--slave", "-e", _HAS_IRKERNEL], IRKERNEL_MISSING if self.r == "R" else own
        )

    def kernel_env(self) -> dict[str, str]:
        if any(os.environ.get(v) for v in ("LC_ALL", "LC_CTYPE", "LANG")):
            return {}
        return {"LANG": "C.UTF-8"}  # else R prints non-ASCII text as <U+00E9>

    def gateway_startup(self, env: Mapping[str, str]) -> str:
        return r_startup(env)
