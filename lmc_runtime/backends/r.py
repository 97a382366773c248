"""R, on IRkernel with the startup code in ``kernels/lmc-r``.

The kernelspec ships with lmc-runtime (no ``IRkernel::installspec()`` needed).
Its ``lmc_startup.R`` reports the line of each top-level expression out of
band, as the Python kernel does, and sets the size of base-graphics plots.
"""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager

from .base import Availability
from .jupyter.backend import JupyterBackend, kernels_dir

__all__ = ["IRKERNEL_MISSING", "R_MISSING", "SYSTEM_LIBRARIES", "RBackend", "find_irkernel"]

#: The reply when there is no R at all.
R_MISSING = "R is not installed: apt-get install r-base-core r-cran-irkernel"
#: The reply when R is there but IRkernel is not.
IRKERNEL_MISSING = "IRkernel is not installed: apt-get install r-cran-irkernel"

#: Where Debian and source installs keep R packages.
SYSTEM_LIBRARIES = (
    "/usr/local/lib/R/site-library",
    "/usr/lib/R/site-library",
    "/usr/lib/R/library",
    "/usr/local/lib/R/library",
)


class _RSpecManager(KernelSpecManager):  # type: ignore[misc]
    """The shipped kernelspecs, with ``R`` in ``argv`` replaced by the R found."""

    r_binary = "R"

    def get_kernel_spec(self, kernel_name: str) -> Any:
        spec = super().get_kernel_spec(kernel_name)
        if spec.argv and spec.argv[0] == "R":
            spec.argv = [self.r_binary, *spec.argv[1:]]
        return spec


def _r_home(r_binary: str) -> Path | None:
    """R_HOME as the ``R`` front-end script names it, without running R."""
    try:
        with open(r_binary, "rb") as fh:
            head = fh.read(8192).decode("utf-8", "replace")
    except OSError:
        return None
    for line in head.splitlines():
        if line.startswith("R_HOME_DIR="):
            return Path(line.partition("=")[2].strip().strip("\"'"))
    return None


def _library_dirs(
    r_binary: str, env: Mapping[str, str], system_libraries: Sequence[str]
) -> Iterator[Path]:
    r_home = _r_home(r_binary)
    if r_home is not None:
        yield r_home / "library"
        yield r_home / "site-library"
    for var in ("R_LIBS", "R_LIBS_SITE", "R_LIBS_USER"):
        for part in env.get(var, "").split(os.pathsep):
            if part:
                yield Path(os.path.expanduser(part))
    yield from (Path(p) for p in system_libraries)
    home = env.get("HOME")
    if home:
        yield from (Path(p) for p in glob.glob(os.path.join(glob.escape(home), "R", "*", "*")))


def find_irkernel(
    r_binary: str,
    env: Mapping[str, str],
    system_libraries: Sequence[str] = SYSTEM_LIBRARIES,
) -> Path | None:
    """The folder of the IRkernel package among R's usual libraries, if any.

    Looks where R looks by default (R_HOME's libraries, ``R_LIBS*``, the
    Debian site libraries, the user library under ``~/R``) without starting R.
    """
    for library in _library_dirs(r_binary, env, system_libraries):
        if (library / "IRkernel" / "DESCRIPTION").is_file():
            return library / "IRkernel"
    return None


class RBackend(JupyterBackend):
    """IRkernel started by the ``R`` found on ``path`` (the process's PATH by default)."""

    kernel_name = "lmc-r"
    announces_input = True
    native_output = True

    def __init__(
        self,
        r_binary: str = "R",
        *,
        path: str | None = None,
        system_libraries: Sequence[str] = SYSTEM_LIBRARIES,
    ) -> None:
        """``path``: where to look for ``r_binary`` (default: the process's PATH)."""
        self.r_binary = r_binary
        self.path = path
        self.system_libraries = tuple(system_libraries)

    def find_r(self) -> str | None:
        """The R front end this backend would start, or None."""
        path = self.path if self.path is not None else os.environ.get("PATH", os.defpath)
        return shutil.which(self.r_binary, path=path)

    def availability(self) -> Availability:
        r = self.find_r()
        if r is None:
            return Availability.no(R_MISSING)
        if find_irkernel(r, os.environ, self.system_libraries) is None:
            return Availability.no(IRKERNEL_MISSING)
        return super().availability()

    def spec_manager(self) -> KernelSpecManager:
        manager = _RSpecManager(kernel_dirs=[str(kernels_dir())])
        manager.r_binary = self.find_r() or self.r_binary
        return manager

    def kernel_env(self) -> dict[str, str]:
        if any(os.environ.get(v) for v in ("LC_ALL", "LC_CTYPE", "LANG")):
            return {}
        return {"LANG": "C.UTF-8"}  # else R prints non-ASCII text as <U+00E9>
