"""The test internet: HTTPS, HTTP, UDP and DNS servers in network namespaces of
their own, with their own certificate authority, and listeners on the host
that record whether anything reached them.

Addresses (``N`` a free ``11.203.X.0/24``, ``P`` a free ``10.204.Y.0/24``):

* ``N.2`` ``allowed.test``, ``N.3`` ``other.test``, ``N.4`` ``*.wild.test``:
  HTTPS on 443, HTTP on 80 and on the probe port, UDP echo on 7007;
* ``N.5``: the DNS server (UDP 53), TTL 0 for every answer;
* ``P.2``: an HTTP server on a private network outside the ceiling;
* the host: TCP listeners on the probe port of 127.0.0.1, ::1, the host's
  outward address and ``N.1`` (the host's end of the veth pair), and a trap
  counting the host's attempts to reach 169.254.169.254 on that port
  (:mod:`.trap`; none leaves the host).

``N`` is a globally routable range (11.0.0.0/8 is not announced on the public
internet), as real servers' addresses are: an egress policy treats private,
loopback and link-local addresses (and the host's own) apart, and the test
internet must have both kinds. The host's route to ``N`` goes to the namespace,
so no packet for it leaves the host.

The DNS names under ``wild.test`` point where attacks want them to: see
:meth:`TestInternet.zone`. ``rebind-*.wild.test`` answers ``N.4`` to its
first A query and 127.0.0.1 after.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

from .local import bindable, die_with_parent, free_port, outward_address, ready
from .netns import PREFIX, add_namespace, free_subnet, remove_namespace, remove_stale, stale
from .trap import Trap, remove_stale_traps

__all__ = ["ALLOWED", "OTHER", "WILD", "TestInternet"]

logger = logging.getLogger(__name__)

ALLOWED, OTHER, WILD = "allowed.test", "other.test", "wild.test"
METADATA = "169.254.169.254"
_HERE = Path(__file__).resolve().parent
#: Runs ``serve`` from this folder whatever the package above it is named (``lmc
#: bench`` imports a benchmarks folder of any name as ``benchmarks``).
_BOOT = (
    "import importlib.util, runpy, sys\n"
    "spec = importlib.util.spec_from_file_location('lmc_test_internet', sys.argv[1] + "
    "'/__init__.py', submodule_search_locations=[sys.argv[1]])\n"
    "sys.modules['lmc_test_internet'] = module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_module('lmc_test_internet.serve', run_name='__main__')\n"
)


class TestInternet:
    """The servers, their addresses and what reached them. ``start`` then ``stop``."""

    __test__ = False  # not a pytest class

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.tag = f"{PREFIX}-{os.getpid()}-{secrets.token_hex(2)}"
        self._namespaces: list[str] = []
        self._processes: list[subprocess.Popen[bytes]] = []
        self._logs: list[Path] = []
        self.outward = outward_address()
        self.metadata: Trap | None = None

    # -- addresses and names --------------------------------------------------

    def start(self, attempts: int = 3) -> TestInternet:
        """Make the namespaces and start the servers. A namespace can vanish
        under a concurrent ``ip netns add`` that remounts /run/netns (setns then
        fails with EINVAL): a failed start is undone and tried again, afresh."""
        for attempt in range(1, attempts + 1):
            try:
                return self._start()
            except RuntimeError as exc:
                if attempt == attempts:
                    raise
                logger.warning("the test internet did not start (%s); again", exc)
                self.tag = f"{PREFIX}-{os.getpid()}-{secrets.token_hex(2)}"
        raise AssertionError("unreachable")

    def _start(self) -> TestInternet:
        from .pki import make_pki  # cryptography, imported only when an internet is made

        self._logs.clear()
        remove_stale()
        remove_stale_traps(stale)
        pid = os.getpid()
        net = free_subnet("11.203", pid % 256)
        hosts = [str(net.network_address + i) for i in range(2, 6)]
        self.allowed, self.other, self.wild, self.dns_ip = hosts
        self.cidr = str(net)
        try:
            self.net_host = self._namespace("net", net, hosts)
            private = free_subnet("10.204", pid % 256)
            self.private = str(private.network_address + 2)
            self.private_cidr = str(private)
            self._namespace("prv", private, [self.private])
            outward = [self.outward] if self.outward else []
            loopback6 = ["::1"] if bindable("::1") else []  # IPv6 may be off
            self.host_side = ["127.0.0.1", *loopback6, self.net_host, *outward]
            self.probe_port = free_port(self.host_side)
            self.ca_path = make_pki(
                self.folder,
                {"allowed": [ALLOWED], "other": [OTHER], "wild": [f"*.{WILD}", WILD]},
            )
            self._serve(f"{self.tag}-net", self._net_listeners(), zone=self.zone())
            self._serve(f"{self.tag}-prv", self._plain("private", self.private, 80))
            self._serve(None, [self._tcp(host) for host in self.host_side])
            trap = Trap(METADATA, self.probe_port, self.tag)
            self.metadata = trap if trap.set() else None
        except BaseException:
            self.stop()
            raise
        return self

    def zone(self) -> dict[str, Any]:
        names: dict[str, list[str]] = {
            ALLOWED: [self.allowed],
            OTHER: [self.other],
            f"*.{WILD}": [self.wild],
            f"loop.{WILD}": ["127.0.0.1"],
            f"veth.{WILD}": [self.net_host],
            f"private.{WILD}": [self.private],
            f"meta.{WILD}": [METADATA],
            f"v6.{WILD}": ["::1"],
            f"v6mapped.{WILD}": ["::ffff:127.0.0.1"],
            f"both.{WILD}": [self.wild, "::ffff:127.0.0.1"],
        }
        if self.outward:
            names[f"hostaddr.{WILD}"] = [self.outward]
        rebind = {"prefix": "rebind-", "suffix": WILD, "first": [self.wild], "then": ["127.0.0.1"]}
        return {"names": names, "rebind": rebind}

    @property
    def ceiling(self) -> str:
        """What ``lmc serve --allow-network`` is given: the test names and the subnet."""
        return f"{ALLOWED},{OTHER},*.{WILD},{self.cidr}"

    @property
    def dns(self) -> str:
        """What ``lmc serve --egress-dns`` is given."""
        return f"{self.dns_ip}:53"

    @property
    def ca_pem(self) -> str:
        return self.ca_path.read_text()

    # -- what reached the servers ---------------------------------------------

    def mark(self) -> tuple[int, ...]:
        """Where the logs end now: pass it as ``since`` to see only what came after."""
        return tuple(len(self._lines(path)) for path in self._logs)

    def events(
        self, kind: str | None = None, at: str | None = None, since: tuple[int, ...] = ()
    ) -> list[dict[str, Any]]:
        """The events logged (after ``since``); ``at``: an address, or ``address:port``."""
        found = []
        for index, path in enumerate(self._logs):
            for line in self._lines(path)[since[index] if index < len(since) else 0 :]:
                event = json.loads(line)
                if kind is not None and event["kind"] != kind:
                    continue
                if at is not None and at not in (event["at"], event["at"].rsplit(":", 1)[0]):
                    continue
                found.append(event)
        return found

    @staticmethod
    def _lines(path: Path) -> list[str]:
        try:
            return path.read_text().splitlines()
        except FileNotFoundError:
            return []

    def connections(self, at: str, since: tuple[int, ...] = ()) -> int:
        """How many TCP connections reached ``at`` (an address or ``address:port``)."""
        return len(self.events("connect", at, since))

    def dns_names(self, since: tuple[int, ...] = ()) -> list[str]:
        """The names the DNS server was asked for, in order."""
        return [event["name"] for event in self.events("dns", since=since)]

    # -- making and ending ----------------------------------------------------

    def _namespace(self, suffix: str, subnet: Any, inner: list[str]) -> str:
        name = f"{self.tag}-{suffix}"
        host_if = f"lti{os.getpid() % 100000}{self.tag[-4:]}{suffix[0]}"[:15]
        host = add_namespace(name, host_if, subnet, inner)
        self._namespaces.append(name)
        return host

    def _plain(self, label: str, host: str, port: int) -> list[dict[str, Any]]:
        return [
            {"kind": "http", "label": label, "host": host, "port": port},
            {"kind": "http", "label": label, "host": host, "port": self.probe_port},
        ]

    def _tcp(self, host: str) -> dict[str, Any]:
        return {"kind": "tcp", "label": "host", "host": host, "port": self.probe_port}

    def _net_listeners(self) -> list[dict[str, Any]]:
        listeners: list[dict[str, Any]] = [
            {"kind": "dns", "label": "dns", "host": self.dns_ip, "port": 53}
        ]
        for label, host in (("allowed", self.allowed), ("other", self.other), ("wild", self.wild)):
            cert = str(self.folder / f"{label}.pem")
            listeners.append(
                {"kind": "https", "label": label, "host": host, "port": 443, "cert": cert}
            )
            listeners += self._plain(label, host, 80)
            listeners.append({"kind": "udp", "label": label, "host": host, "port": 7007})
        return listeners

    def _serve(self, namespace: str | None, listeners: list[Any], zone: Any = None) -> None:
        index = len(self._processes)
        log = self.folder / f"events-{self.tag}-{index}.jsonl"
        config = {"log": str(log), "listeners": listeners, **({"zone": zone} if zone else {})}
        path = self.folder / f"servers-{index}.json"
        path.write_text(json.dumps(config))
        argv = [sys.executable, "-c", _BOOT, str(_HERE), str(path)]
        if namespace is not None:
            argv = ["ip", "netns", "exec", namespace, *argv]
        errors = (self.folder / f"servers-{index}.err").open("wb")
        process = subprocess.Popen(
            argv,
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            preexec_fn=die_with_parent,
        )
        errors.close()
        self._processes.append(process)
        self._logs.append(log)
        if not ready(process.stdout):
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
            detail = (self.folder / f"servers-{index}.err").read_text()[-2000:]
            raise RuntimeError(f"the test internet's servers did not start: {detail}")

    @property
    def pids(self) -> list[int]:
        """The servers' processes."""
        return [process.pid for process in self._processes]

    @property
    def namespaces(self) -> list[str]:
        return list(self._namespaces)

    def stop(self) -> None:
        for process in self._processes:
            if process.poll() is None:
                process.terminate()
        for process in self._processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
            if process.stdout is not None:
                process.stdout.close()
        for name in self._namespaces:
            remove_namespace(name)
        if self.metadata is not None:
            self.metadata.remove()
        self._processes.clear()
        self._namespaces.clear()
