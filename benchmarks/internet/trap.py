"""A counter of the host's own connection attempts to an address nothing in the
test internet can stand for (169.254.169.254, where clouds answer with their
metadata): an iptables rule in the host's OUTPUT chain, for the probe port
only, that counts each attempt and resets it, so nothing reaches a real
metadata service either. Rules carry their internet's tag as a comment, so
that a dead run's are found and removed."""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Callable

__all__ = ["Trap", "remove_stale_traps"]

logger = logging.getLogger(__name__)


def _iptables(*args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["iptables", "-w", "10", *args], capture_output=True, text=True, timeout=30, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"iptables {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


class Trap:
    """Counts TCP connection attempts from the host to ``address:port``."""

    def __init__(self, address: str, port: int, tag: str) -> None:
        self.tag = tag
        self._rule = ["OUTPUT", "-d", f"{address}/32", "-p", "tcp", "--dport", str(port)]
        self._rule += ["-m", "comment", "--comment", tag, "-j", "REJECT"]
        self._rule += ["--reject-with", "tcp-reset"]
        self.active = False

    def set(self) -> bool:
        """Install the rule; False where iptables is missing."""
        if shutil.which("iptables") is None:
            return False
        _iptables("-I", *self._rule)
        self.active = True
        return True

    def count(self) -> int:
        """Packets the rule has seen (each attempt sends at least one)."""
        for line in _iptables("-L", "OUTPUT", "-v", "-x", "-n").splitlines():
            if f"/* {self.tag} */" in line:
                return int(line.split()[0])
        raise RuntimeError(f"the trap {self.tag} is gone")

    def remove(self) -> None:
        if self.active:
            _iptables("-D", *self._rule, check=False)
            self.active = False


def remove_stale_traps(is_stale: Callable[[str], bool]) -> None:
    """Remove the OUTPUT rules whose comment is a tag ``is_stale`` accepts."""
    if shutil.which("iptables") is None:
        return
    for line in _iptables("-S", "OUTPUT", check=False).splitlines():
        parts = line.split()
        if "--comment" not in parts or parts[:1] != ["-A"]:
            continue
        tag = parts[parts.index("--comment") + 1].strip('"')
        if is_stale(tag):
            logger.info("removing the stale trap %s", tag)
            _iptables("-D", *parts[1:], check=False)
