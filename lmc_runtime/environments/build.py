"""``lmc env create``: an environment built beside its final folder, moved in
place whole, and marked ready by its manifest, written last.

A virtualenv is made with the chosen Python (never with the system's
site-packages), ipykernel and the packages asked for are installed with pip
from the indexes the host reaches, and node packages with ``npm install
--prefix``. The build happens in a hidden folder next to the final one; its
scripts' ``#!`` lines are pointed at the final path before the move (a
virtualenv is not relocatable, and the sandbox shows it at the same path).
Bytecode is compiled after the move, so that tracebacks name real files.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ..errors import LMCError
from ..sandbox.environment import name_problem
from .store import MANIFEST, Manifest, environments_dir, unseen_python

__all__ = ["BuildFailed", "create_environment"]

logger = logging.getLogger(__name__)

#: What every environment gets: the kernel the runtime starts (and what its
#: display helpers in kernels/lmc-python import, which is the standard library).
KERNEL_PACKAGES = ("ipykernel",)
#: npm's options: a local folder is copied in (the sandbox shows only the
#: environment's folder, not a link out of it).
_NPM_OPTIONS = ("--no-audit", "--no-fund", "--install-links")
#: How long one step (venv, pip, npm) may take.
STEP_TIMEOUT = 1800.0


class BuildFailed(LMCError):
    """An environment could not be built; nothing of it was left behind."""


def _run(argv: Sequence[str], what: str, cwd: Path | None = None) -> str:
    """Run one step; its output, or :class:`BuildFailed` with its last lines."""
    logger.info("%s: %s", what, " ".join(argv))
    try:
        done = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
            cwd=cwd,
            check=False,
        )
    except OSError as exc:
        raise BuildFailed(f"{what}: {argv[0]} cannot be run: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        raise BuildFailed(f"{what} did not finish within {STEP_TIMEOUT:g} s") from None
    if done.returncode != 0:
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        tail = "\n  ".join(lines[-12:])
        raise BuildFailed(f"{what} failed (exit {done.returncode}):\n  {tail}")
    return done.stdout


def _point_scripts(bin_dir: Path, built: Path, final: Path) -> None:
    """Rewrite ``built`` as ``final`` in the text files of ``bin_dir`` (pip's
    ``#!`` lines, ``activate``'s ``VIRTUAL_ENV``)."""
    old, new = str(built).encode(), str(final).encode()
    for entry in bin_dir.iterdir():
        if entry.is_symlink() or not entry.is_file():
            continue
        data = entry.read_bytes()
        if old in data and b"\0" not in data[:4096]:
            mode = entry.stat().st_mode
            entry.write_bytes(data.replace(old, new))
            entry.chmod(mode)


def _open_to_all(root: Path) -> None:
    """Every folder and file under ``root`` readable (and searchable, runnable
    where its owner may) by all: sessions run as host users of their own,
    whatever the umask of the build was."""
    for top, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                continue
            mode = info.st_mode | stat.S_IRGRP | stat.S_IROTH
            if stat.S_ISDIR(info.st_mode) or info.st_mode & stat.S_IXUSR:
                mode |= stat.S_IXGRP | stat.S_IXOTH
            if mode != info.st_mode:
                os.chmod(path, stat.S_IMODE(mode))


def _write_manifest(root: Path, manifest: Manifest) -> None:
    """The manifest, atomically (a temporary file renamed over it)."""
    temporary = root / f".{MANIFEST}.{uuid.uuid4().hex[:8]}"
    temporary.write_text(manifest.to_json(), encoding="utf-8")
    temporary.chmod(0o644)
    os.replace(temporary, root / MANIFEST)


def _requirement_lines(files: Sequence[Path]) -> list[str]:
    lines = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise BuildFailed(f"{file}: cannot read it: {exc.strerror or exc}") from None
        lines += [line.strip() for line in text.splitlines() if line.strip()]
    return lines


def _build(
    building: Path,
    python: str,
    pip: Sequence[str],
    requirements: Sequence[Path],
    npm: Sequence[str],
) -> str:
    """The virtualenv and packages in ``building``; the Python's ``major.minor``."""
    _run([python, "-m", "venv", str(building)], "making the virtualenv")
    venv_python = str(building / "bin" / "python")
    install = [venv_python, "-m", "pip", "install", "--no-input", "--no-compile"]
    install += ["--disable-pip-version-check", *KERNEL_PACKAGES, *pip]
    for file in requirements:
        install += ["--requirement", str(file)]
    _run(install, "installing the Python packages")
    if npm:
        npm_command = shutil.which("npm")
        if npm_command is None:
            raise BuildFailed("node packages were asked for, but npm is not installed")
        _run(
            [npm_command, "install", "--prefix", str(building), *_NPM_OPTIONS, *npm],
            "installing the node packages",
            cwd=building,
        )
    check = "import ipykernel, sys; print('%d.%d' % sys.version_info[:2])"
    return _run([venv_python, "-c", check], "checking the kernel").strip()


def create_environment(
    data_dir: Path,
    name: str,
    *,
    pip: Sequence[str] = (),
    requirements: Sequence[Path] = (),
    npm: Sequence[str] = (),
    python: str | None = None,
) -> Path:
    """Build the environment ``name`` under ``data_dir``; its folder.
    :class:`BuildFailed` (and nothing left behind) if it cannot be built or exists."""
    problem = name_problem(name)
    if problem is not None:
        raise BuildFailed(problem)
    parent = environments_dir(data_dir)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        # Sandboxed sessions, whatever host user they run as, read environments.
        os.chmod(parent, 0o755)
    except OSError as exc:
        raise BuildFailed(f"{parent}: {exc.strerror or exc}") from None
    final = parent / name
    if os.path.lexists(final):
        raise BuildFailed(f"the environment {name!r} exists already: `lmc env remove {name}` first")
    asked = _requirement_lines(requirements)
    base = python or sys.executable
    unseen = unseen_python(Path(base))
    if unseen is not None:
        raise BuildFailed(unseen.replace("its Python is", "the Python", 1))
    building = parent / f".{name}.building-{uuid.uuid4().hex[:8]}"
    try:
        version = _build(building, base, pip, requirements, npm)
        _point_scripts(building / "bin", building, final)
        os.rename(building, final)
    except OSError as exc:
        shutil.rmtree(building, ignore_errors=True)
        raise BuildFailed(f"{exc.filename or building}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    try:
        site = final / "lib" / f"python{version}" / "site-packages"
        # Best effort: a package's file that does not compile is its own business.
        subprocess.run(
            [str(final / "bin" / "python"), "-m", "compileall", "-q", "-j0", str(site)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=STEP_TIMEOUT,
            check=False,
        )
        _open_to_all(final)
        os.chmod(final, 0o755)
        created = datetime.now(UTC).isoformat(timespec="seconds")
        manifest = Manifest(name, version, created, "ready", list(pip), asked, list(npm))
        _write_manifest(final, manifest)
    except BaseException:
        shutil.rmtree(final, ignore_errors=True)
        raise
    logger.info("built the environment %s in %s", name, final)
    return final
