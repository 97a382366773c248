"""``lmc setup``: what the runtime's features need, installed, and the host prepared
for ``lmc serve``'s sandboxes; ``--dry-run`` says each change and makes none."""

from __future__ import annotations

import argparse
import sys
import textwrap

from ..sandbox.hostprep import HOST_CHANGES
from ..sysdeps import SYSTEM_PACKAGES

__all__ = ["SETUP_DESCRIPTION", "add_setup_options", "cmd_setup"]

_CHANGES = (
    "installs the missing system packages with apt-get (as root on Debian or Ubuntu; "
    "otherwise it prints the command): " + ", ".join(p.name for p in SYSTEM_PACKAGES),
    "runs npm ci in the package's kernels/lmc-node folder (the TypeScript compiler) "
    "and makes its node_modules readable by all users",
    "builds the Java runner with javac in kernels/lmc-java/build, and records its "
    "class-data archive",
    *(f"as root, {change}" for change in HOST_CHANGES),
)

SETUP_DESCRIPTION = (
    "Install what the runtime's languages and lmc serve need, and prepare this host "
    "for lmc serve's sandboxes. It changes the host:\n"
    + "".join(f"  - {change}\n" for change in _CHANGES)
    + "Each step that has nothing to do says so. --dry-run prints every change it "
    "would make, and makes none."
)


class _Wrapped(argparse.RawDescriptionHelpFormatter):
    """The description's list as written, each item wrapped to the terminal."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            hanging = " " * (len(line) - len(line.lstrip(" -")))
            lines.append(
                textwrap.fill(
                    line, width, initial_indent=indent, subsequent_indent=indent + hanging
                )
            )
        return "\n".join(lines)


def add_setup_options(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = _Wrapped
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print each change (packages to install, files and modes to change) and make none",
    )


def cmd_setup(args: argparse.Namespace) -> int:
    from ..backends.java import runner_source
    from ..backends.typescript import node_packages_dir
    from ..java_runner import build_runner, plan_runner
    from ..sandbox.hostprep import prepare_host
    from ..sysdeps import ensure_node_packages, ensure_system_packages

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    dry_run: bool = args.dry_run
    ensure_system_packages(say=say, dry_run=dry_run)
    ensure_node_packages(node_packages_dir(), needed_for="TypeScript", say=say, dry_run=dry_run)
    if dry_run:
        plan_runner(runner_source(), say)
    else:
        build_runner(runner_source(), say)
    prepare_host(say, dry_run=dry_run)
    if dry_run:
        say("lmc setup: dry run: nothing was changed")
    return 0
