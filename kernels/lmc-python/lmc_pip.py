"""``%pip`` in an lmc-runtime Python kernel: pip run with the kernel's Python, its
output free of ANSI codes, and the cell failed when pip fails (IPython's own
``%pip`` only prints). The user site folder (``PYTHONUSERBASE``, where a
sandboxed session's pip installs) goes on ``sys.path`` if a kernel forked before
it was set lacks it. Loaded by ``lmc_startup.py``."""

from __future__ import annotations

import importlib
import os
import re
import shlex
import site
import subprocess
import sys
from typing import Any

_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07]*\x07|[@-Z\\-_])")


class PipFailed(Exception):
    """pip ended with a non-zero status."""

    def _render_traceback_(self) -> list[str]:
        return [f"PipFailed: {self}"]


def _user_site() -> None:
    base = os.environ.get("PYTHONUSERBASE")
    if base and not sys.flags.no_user_site:
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        folder = os.path.join(base, "lib", version, "site-packages")
        if os.path.isdir(folder) and folder not in sys.path:
            site.addsitedir(folder)


def pip(line: str) -> None:
    """Run ``pip LINE`` with this kernel's Python, its output streamed as it comes."""
    argv = [sys.executable, "-m", "pip", *shlex.split(line)]
    env = {**os.environ, "PIP_NO_COLOR": "1"}
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        assert process.stdout is not None
        for raw in process.stdout:
            print(_ANSI.sub("", raw.decode("utf-8", "replace")), end="", flush=True)
        status = process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    importlib.invalidate_caches()
    if status != 0:
        raise PipFailed(f"pip {line} failed with exit status {status}")


def install(ip: Any) -> None:
    """Put the user site on ``sys.path`` if missing, and make ``%pip`` this one."""
    _user_site()
    ip.register_magic_function(pip, "line", "pip")
