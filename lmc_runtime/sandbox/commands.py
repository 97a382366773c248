"""The interpreters' commands a session's shell finds first: ``python``,
``python3``, ``pip`` and ``pip3`` in the control folder's ``bin`` (the host's;
read-only inside), and the profile a login shell reads, which puts them first
on ``PATH`` again."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterable
from pathlib import Path

from .view import PROFILE_NAME, SANDBOX_CONTROL, SANDBOX_RUNTIME

__all__ = ["write_commands"]

#: The commands of the interpreters' own Python, by the names code calls them.
_PYTHON_NAMES = ("python", "python3")
_PIP_NAMES = ("pip", "pip3")


def write_commands(folder: Path, python: str | None = None, path: Iterable[str] = ()) -> None:
    """Make ``folder`` (the host's; read-only inside) hold ``python``, ``python3``,
    ``pip`` and ``pip3``: the Python the session's kernels run on (``python``; None:
    this one), so that a shell command (``python script.py``, ``pip install``) gets
    the same interpreter and packages as the code. ``path``: folders a login
    shell's ``PATH`` gets after it (an environment's). Blocking."""
    folder.mkdir(mode=0o755, exist_ok=True)
    own = python is None
    python = python or sys.executable
    pip = Path(python).with_name("pip")
    targets = dict.fromkeys(_PYTHON_NAMES, python)
    if pip.is_file():
        targets.update(dict.fromkeys(_PIP_NAMES, str(pip)))
    for name, target in targets.items():
        link = folder / name
        if own and not link.is_symlink():
            link.symlink_to(target)
        elif not own and not os.path.lexists(link):
            # A script, not a link: Python finds a virtualenv by the path it was
            # started at, and a link to the venv's own link would resolve past it.
            fd = os.open(link, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
            with os.fdopen(fd, "w", encoding="utf-8") as script:
                script.write(f'#!/bin/sh\nexec {shlex.quote(target)} "$@"\n')
    # A login shell takes PATH from /etc/profile: this puts these first again.
    profile = folder.parent / PROFILE_NAME
    first = [f"{SANDBOX_RUNTIME}/local/bin", f"{SANDBOX_CONTROL}/bin", *path]
    profile.write_text(f'PATH="{":".join(first)}:$PATH"\n')
    profile.chmod(0o644)
