"""System packages the runtime's features need, and installing the missing ones.

``lmc setup`` installs what the machine lacks through ``apt-get`` when it runs
as root on Debian or Ubuntu. Otherwise it prints one line saying what to
install, and goes on: each feature reports itself unavailable until then.
The npm packages of a folder the runtime ships (``kernels/lmc-node``: the
TypeScript compiler) are installed into that folder's ``node_modules`` with
``npm ci``, readable by every user, so that sandboxes see them too.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "SYSTEM_PACKAGES",
    "SystemPackage",
    "ensure_node_packages",
    "ensure_system_packages",
    "missing_node_packages",
    "missing_packages",
]

logger = logging.getLogger(__name__)


class SystemPackage(NamedTuple):
    """A Debian package, the program that shows it is there, and what needs it."""

    name: str
    binary: str
    needed_for: str


SYSTEM_PACKAGES: tuple[SystemPackage, ...] = (
    SystemPackage("r-base-core", "R", "the R language"),
    SystemPackage("r-cran-irkernel", "", "the R language (IRkernel)"),
    SystemPackage("bubblewrap", "bwrap", "the sandbox of `lmc serve`"),
    SystemPackage("slirp4netns", "slirp4netns", "network access of `lmc serve --allow-network`"),
    SystemPackage("iptables", "iptables-restore", "network access of `lmc serve --allow-network`"),
    SystemPackage(
        "chromium", "chromium", "screenshots of HTML output, and the tests of the web console"
    ),
    SystemPackage("libcairo2", "", "SVG displays rendered by cairosvg (pip install cairosvg)"),
    SystemPackage("tmux", "tmux", "the tests of `lmc repl`"),
    SystemPackage("zsh", "zsh", "the zsh shell backend"),
    SystemPackage("default-jdk-headless", "javac", "the Java language (javac, the JShell API)"),
    SystemPackage("haproxy", "haproxy", "the tests of lmc serve replicas behind a balancer"),
    SystemPackage("postgresql", "", "the tests of the PostgreSQL transcript store"),
    SystemPackage("nginx-light", "nginx", "the tests of E2B's SDKs through a TLS proxy"),
)


def _installed(package: SystemPackage) -> bool:
    if shutil.which("dpkg-query"):
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package.name],
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        return result.returncode == 0 and "install ok installed" in result.stdout
    return bool(package.binary) and shutil.which(package.binary) is not None


def missing_packages(packages: Sequence[SystemPackage] = SYSTEM_PACKAGES) -> list[SystemPackage]:
    """The packages in ``packages`` that this machine lacks."""
    return [p for p in packages if not _installed(p)]


def ensure_system_packages(
    packages: Sequence[SystemPackage] = SYSTEM_PACKAGES,
    *,
    say: Callable[[str], None],
    run: Callable[[list[str]], int] | None = None,
    is_root: bool | None = None,
    dry_run: bool = False,
) -> bool:
    """Install what is missing if we may; return True when nothing is missing after.
    With ``dry_run``, say what would be installed and install nothing."""
    missing = missing_packages(packages)
    if not missing:
        say("lmc setup: all system packages are present")
        return True
    names = [p.name for p in missing]
    root = os.geteuid() == 0 if is_root is None else is_root
    if dry_run and root:
        for package in missing:
            say(
                f"lmc setup: would run apt-get install -y {package.name} (for {package.needed_for})"
            )
        return False
    if not root or not shutil.which("apt-get"):
        say(
            "lmc setup: missing system packages "
            + ", ".join(f"{p.name} (for {p.needed_for})" for p in missing)
            + f"; install them with: sudo apt-get install -y {' '.join(names)}"
        )
        return False
    runner = run or _run
    say(f"lmc setup: installing {' '.join(names)} with apt-get")
    if runner(["apt-get", "update", "-q"]) != 0:
        say("lmc setup: apt-get update failed; trying the install anyway")
    code = runner(["apt-get", "install", "-y", "-q", "--no-install-recommends", *names])
    if code != 0:
        say(f"lmc setup: apt-get install failed (exit {code}); install by hand: {' '.join(names)}")
        return False
    return not missing_packages(packages)


def _run(argv: list[str]) -> int:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, check=False).returncode


def missing_node_packages(folder: Path) -> dict[str, str]:
    """The npm packages ``folder``'s lock file pins that its ``node_modules`` lacks.

    Maps each name to the version wanted; a package of another version is missing.
    Development and optional packages are not counted (npm leaves out an optional
    one this machine's node or platform cannot take).
    """
    lock = json.loads((folder / "package-lock.json").read_text(encoding="utf-8"))
    missing: dict[str, str] = {}
    for key, entry in lock.get("packages", {}).items():
        if not key.startswith("node_modules/") or entry.get("dev") or entry.get("optional"):
            continue
        wanted = str(entry.get("version", ""))
        try:
            found = json.loads((folder / key / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            found = {}
        if not isinstance(found, dict) or found.get("version") != wanted:
            missing[key.removeprefix("node_modules/")] = wanted
    return missing


def ensure_node_packages(
    folder: Path,
    *,
    needed_for: str,
    say: Callable[[str], None],
    run: Callable[[list[str], Path], int] | None = None,
    dry_run: bool = False,
) -> bool:
    """``npm ci`` in ``folder`` unless its packages are there; True when they are after.
    With ``dry_run``, say what would be installed and install nothing."""
    try:
        missing = missing_node_packages(folder)
    except (OSError, ValueError) as exc:
        say(f"lmc setup: {folder} has no readable package-lock.json ({exc}); {needed_for} is off")
        return False
    wanted = " ".join(f"{name}@{version}" for name, version in sorted(missing.items()))
    if not missing:
        say(f"lmc setup: the npm packages for {needed_for} are present")
        return True
    if dry_run:
        say(
            f"lmc setup: would run npm ci in {folder} ({wanted}, for {needed_for}) "
            "and make its node_modules readable by all users"
        )
        return False
    npm = shutil.which("npm")
    if npm is None:
        say(
            f"lmc setup: npm is missing, so {wanted} (for {needed_for}) cannot be installed; "
            "install it with: sudo apt-get install -y npm, then run lmc setup again"
        )
        return False
    if not os.access(folder, os.W_OK):
        say(f"lmc setup: {folder} is not writable here; run lmc setup as its owner for {wanted}")
        return False
    say(f"lmc setup: installing {wanted} (for {needed_for}) into {folder / 'node_modules'}")
    argv = [npm, "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"]
    code = (run or _run_in)(argv, folder)
    if code != 0 or missing_node_packages(folder):
        say(f"lmc setup: npm ci in {folder} failed (exit {code}); {needed_for} stays unavailable")
        return False
    readable_by_all(folder / "node_modules")
    return True


def readable_by_all(root: Path) -> None:
    """``chmod -R a+rX root``: the sandboxes' users read what root installed."""
    _open_up(root)
    for top, dirs, files in os.walk(root):
        for name in [*dirs, *files]:  # folders before the walk enters them
            _open_up(Path(top, name))


def _open_up(path: Path) -> None:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return
    mode = stat.S_IMODE(info.st_mode)
    wanted = mode | 0o444
    if stat.S_ISDIR(info.st_mode) or mode & 0o111:
        wanted |= 0o111
    if wanted != mode:
        os.chmod(path, wanted)


def _run_in(argv: list[str], cwd: Path) -> int:
    return subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, check=False).returncode
