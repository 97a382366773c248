"""System packages the runtime's features need, and installing the missing ones.

``lmc setup`` installs what the machine lacks through ``apt-get`` when it runs
as root on Debian or Ubuntu. Otherwise it prints one line saying what to
install, and goes on: each feature reports itself unavailable until then.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["SYSTEM_PACKAGES", "SystemPackage", "ensure_system_packages", "missing_packages"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SystemPackage:
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
    SystemPackage("chromium", "chromium", "screenshots of HTML output"),
    SystemPackage("tmux", "tmux", "the tests of `lmc repl`"),
    SystemPackage("zsh", "zsh", "the zsh shell backend"),
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
) -> bool:
    """Install what is missing if we may; return True when nothing is missing after."""
    missing = missing_packages(packages)
    if not missing:
        say("lmc setup: all system packages are present")
        return True
    names = [p.name for p in missing]
    root = os.geteuid() == 0 if is_root is None else is_root
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
