"""What the egress attack tests share: a session on a server, the probes it
runs, the window in which the test internet watches what reached it, and the
control request that proves the session's network works at all."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from benchmarks.internet import ALLOWED, WILD, TestInternet
from tests.integration.egress.probes import probe
from tests.integration.service.server import Server

__all__ = ["GUARDED", "Sandbox", "Window"]

#: The guarded sessions' policy: one name and one wildcard of the ceiling
#: (which also holds other.test and the test subnet).
GUARDED = {"allow": [ALLOWED, f"*.{WILD}"]}


@dataclass
class Window:
    """What reached the test internet while the attacks of one ``run`` ran."""

    world: TestInternet
    since: tuple[int, ...]

    def events(self, kind: str | None = None, at: str | None = None) -> list[dict[str, Any]]:
        return self.world.events(kind, at, self.since)

    def connections(self, at: str) -> int:
        return self.world.connections(at, self.since)

    def dns_names(self) -> list[str]:
        return self.world.dns_names(self.since)

    def host_reached(self) -> list[dict[str, Any]]:
        """Connections to the host's own listeners (loopback, ::1, its addresses)."""
        port = self.world.probe_port
        return [e for h in self.world.host_side for e in self.events("connect", f"{h}:{port}")]


@dataclass
class Sandbox:
    """A session of ``server`` and the test internet it probes."""

    server: Server
    session: str
    world: TestInternet

    def run(self, **calls: str) -> tuple[dict[str, Any], Window]:
        """Run the probes; what each gave, and what reached the test internet."""
        since = self.world.mark()
        results = probe(self.server, self.session, self.world.ca_pem, calls)
        return results, Window(self.world, since)

    def control(self) -> None:
        """An allowed HTTPS request, checked on both ends: the session's
        network works, so a refused attack was refused by the policy."""
        path = f"/control-{secrets.token_hex(4)}"
        call = f"tls_get({ALLOWED!r}, sni={ALLOWED!r}, path={path!r}, verify=True)"
        results, window = self.run(ok=call)
        assert f"hello from allowed {path}" in results["ok"], results
        requests = window.events("request", f"{self.world.allowed}:443")
        assert [r["path"] for r in requests] == [path], requests
