"""``lmc serve`` as root and as an unprivileged user, for the attack tests.

Each attack runs against a real server with real bubblewrap, twice: once with
the server running as root (as ``lmc setup`` and the README lead people to
do) and once as a throwaway unprivileged user that the fixture creates and
removes afterwards.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.integration.service.server import Server, _running

__all__ = ["Account", "as_user", "serve_as", "temporary_account"]


@dataclass(frozen=True)
class Account:
    """A host user the server runs as (root: uid 0)."""

    name: str
    uid: int
    gid: int

    @property
    def root(self) -> bool:
        return self.uid == 0


ROOT = Account("root", 0, 0)


def _traversable(path: Path) -> list[tuple[Path, int]]:
    """Give 'others' search permission on every parent of ``path`` that lacks it
    (the Python install may live under /root); returns what to restore."""
    changed: list[tuple[Path, int]] = []
    for parent in [path, *path.parents]:
        try:
            mode = parent.stat().st_mode
        except OSError:
            continue
        if parent.is_dir() and not mode & 0o001:
            os.chmod(parent, (mode & 0o7777) | 0o001)
            changed.append((parent, mode & 0o7777))
    return changed


@contextmanager
def temporary_account() -> Iterator[Account]:
    """A new system user with no home and no login, removed afterwards."""
    name = "lmct" + secrets.token_hex(4)
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    try:
        entry = pwd.getpwnam(name)
        # As `lmc setup` does for the sandbox users: search permission (not
        # read) on the folders above the Python install. Left in place, since
        # root servers' sandboxes need it too.
        for path in (Path(sys.executable).resolve(), Path(__file__).resolve()):
            _traversable(path.parent)
        yield Account(name, entry.pw_uid, entry.pw_gid)
    finally:
        subprocess.run(["pkill", "-KILL", "-u", name], check=False, capture_output=True)
        subprocess.run(["userdel", name], check=False, capture_output=True)


def as_user(account: Account) -> list[str]:
    """The argv prefix that runs a command as ``account``."""
    if account.root:
        return []
    return [
        "setpriv",
        f"--reuid={account.uid}",
        f"--regid={account.gid}",
        "--clear-groups",
        "--",
        "env",
        f"HOME={tempfile.gettempdir()}",
        "XDG_DATA_HOME=",
    ]


@contextmanager
def serve_as(account: Account, *args: str, prefix: tuple[str, ...] = ()) -> Iterator[Server]:
    """A real ``lmc serve`` running as ``account`` with ``args`` (its command run
    through ``prefix``, if given)."""
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o755)
        data = Path(tmp) / "data"
        data.mkdir()
        if not account.root:
            os.chown(data, account.uid, account.gid)
            if "--max-sessions" in args and "--allow-shared-limits" not in args:
                args = (*args, "--allow-shared-limits")
        with _running(
            data, args, token="test-token-0123456789", prefix=[*prefix, *as_user(account)]
        ) as s:
            yield s
        shutil.rmtree(data, ignore_errors=True)
