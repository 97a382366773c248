"""The runtime's startup code as one silent request, for a kernel on a gateway.

A local kernel runs the files of ``kernels/lmc-python`` (``lmc-r``) as its
kernelspec says; a gateway's kernel has the gateway's own kernelspec, so the
same files are sent to it as code: Python writes them to a temporary folder of
its own (``lmc_displays.py`` loads ``lmc_charts.py`` from beside it) and runs
``lmc_startup.py`` from there, leaving nothing in the user's namespace; R runs
``lmc_startup.R`` without its last line, which starts IRkernel. Both then set
the session's environment variables in the kernel.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ...kernelspecs import kernels_dir

__all__ = ["python_startup", "r_startup"]

_PYTHON_FILES = (
    "lmc_startup.py",
    "lmc_displays.py",
    "lmc_pip.py",
    "lmc_charts.py",
    "lmc_checkpoint.py",
    "lmc_revive.py",
    "lmc_lean.py",
)

_PYTHON_LOADER = """\
def _lmc_remote_startup(files, env):
    import atexit, os, shutil, tempfile
    folder = tempfile.mkdtemp(prefix="lmc-kernel-")
    atexit.register(shutil.rmtree, folder, True)
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as out:
            out.write(text)
    path = os.path.join(folder, "lmc_startup.py")
    with open(path, encoding="utf-8") as source:
        code = compile(source.read(), path, "exec")
    exec(code, {"__name__": "__lmc_startup__", "__file__": path})
    os.environ.update(env)
_lmc_remote_startup(__LMC_FILES__, __LMC_ENV__)
del _lmc_remote_startup
"""


def python_startup(env: Mapping[str, str]) -> str:
    """Code that installs ``kernels/lmc-python`` in a running ipykernel, and sets ``env``."""
    folder = kernels_dir() / "lmc-python"
    files = {name: (folder / name).read_text(encoding="utf-8") for name in _PYTHON_FILES}
    code = _PYTHON_LOADER.replace("__LMC_FILES__", repr(files), 1)
    return code.replace("__LMC_ENV__", repr(dict(env)), 1)


def r_startup(env: Mapping[str, str]) -> str:
    """Code that installs ``kernels/lmc-r`` in a running IRkernel, and sets ``env``."""
    text = (kernels_dir() / "lmc-r" / "lmc_startup.R").read_text(encoding="utf-8")
    lines = text.rstrip().splitlines()
    if lines and lines[-1].startswith("IRkernel::main("):
        lines.pop()
    if env:  # JSON string literals read alike in R
        pairs = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in env.items())
        lines.append(f"invisible(do.call(Sys.setenv, list({pairs})))")
    return "\n".join(lines) + "\n"
