"""The egress policy's cost (``lmc bench --only egress``), each figure beside
its comparison measured in the same run against the same servers.

- an HTTPS request (connect, TLS handshake, GET, read to the end) from a
  session under a policy, through the server's egress gateway, against the same
  request made directly from the host (median and p90);
- a 50 MB download over HTTPS, the same two ways (throughput, median);
- a session's creation to its first result with a policy, against without one.

The servers are the test internet's (:mod:`benchmarks.internet`: HTTPS in a
network namespace of its own, with its own CA), so the figures are those of
this host's kernel and the gateway, not of a real network. Root and ``ip
netns`` are needed. The timed code is the same stdlib script both ways, timing
itself, so the session's figures leave the API's round trip out; it resolves
the name once (the gateway's DNS in the session), then dials the address.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .model import Figure, Timing
from .service import local_server
from .workloads import BenchError

__all__ = ["EgressFigures", "egress_phase", "missing_for_egress"]

_DOWNLOAD = 50_000_000
_POLICY = {"allow": ["allowed.test"]}

_PROBE = r"""
import json, socket, ssl, time
context = ssl.create_default_context(cadata={ca!r})
address = socket.getaddrinfo({name!r}, 443, socket.AF_INET)[0][4][0] if {resolve} else {name!r}
def fetch(path):
    started = time.perf_counter()
    total = 0
    with socket.create_connection((address, 443), timeout=120) as raw:
        with context.wrap_socket(raw, server_hostname="allowed.test") as tls:
            tls.sendall(("GET %s HTTP/1.1\r\nHost: allowed.test\r\n"
                         "Connection: close\r\n\r\n" % path).encode())
            while piece := tls.recv(1 << 20):
                total += len(piece)
    return time.perf_counter() - started, total
fetch("/")
latencies = [fetch("/")[0] for _ in range({requests})]
downloads = []
for _ in range({downloads}):
    took, size = fetch("/bytes/{size}")
    if size < {size}:
        raise SystemExit("a short download: %d bytes" % size)
    downloads.append(took)
print(json.dumps({{"latencies": latencies, "downloads": downloads}}))
"""


def missing_for_egress() -> str | None:
    """Why the egress rows cannot be measured here, or None."""
    from lmc_runtime.sandbox import sandbox_available

    from ..internet import netns_problem

    problem = netns_problem()
    if problem is not None:
        return f"the egress rows need the test internet: {problem}"
    availability = sandbox_available()
    if not availability.available:
        return f"the egress rows need the sandbox: {availability.reason}"
    return None


@dataclass(frozen=True)
class EgressFigures:
    """Through the egress policy against direct, on the same servers."""

    https_policy: Timing
    https_direct: Timing
    download_policy_mbps: float
    download_direct_mbps: float
    create_policy: Timing
    create_plain: Timing

    def figures(self) -> list[Figure]:
        rows = []
        for stat in ("median", "p90"):
            ours = getattr(self.https_policy, f"{stat}_ms")
            base = getattr(self.https_direct, f"{stat}_ms")
            rows.append(
                Figure(
                    f"egress_https_{stat}",
                    f"an HTTPS request through the egress policy, {stat}",
                    "ms",
                    ours,
                    base,
                    "direct from the host",
                    ours / base if base else None,
                    informational=True,
                )
            )
        ours, base = self.download_policy_mbps, self.download_direct_mbps
        rows.append(
            Figure(
                "egress_download",
                "a 50 MB HTTPS download through the egress policy",
                "MB/s",
                ours,
                base,
                "direct from the host",
                ours / base if base else None,
                informational=True,
            )
        )
        for stat in ("median", "p90"):
            ours = getattr(self.create_policy, f"{stat}_ms")
            base = getattr(self.create_plain, f"{stat}_ms")
            rows.append(
                Figure(
                    f"egress_create_{stat}",
                    f"session creation to its first result with a policy, {stat}",
                    "ms",
                    ours,
                    base,
                    "without a policy",
                    ours / base if base else None,
                    informational=True,
                )
            )
        return rows


def _probe(ca: str, name: str, resolve: bool, requests: int, downloads: int) -> str:
    return _PROBE.format(
        ca=ca, name=name, resolve=resolve, requests=requests, downloads=downloads, size=_DOWNLOAD
    )


def _mbps(seconds: list[float]) -> float:
    return _DOWNLOAD / statistics.median(seconds) / 1e6


class _Client:
    """Sessions of one ``lmc serve``, over its HTTP API."""

    def __init__(self, url: str, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        self.http = httpx.Client(base_url=url, headers=headers, timeout=300)

    def create(self, **body: Any) -> str:
        response = self.http.post("/v1/sessions", json=body)
        if response.status_code != 201:
            raise BenchError(f"session creation answered {response.status_code}: {response.text}")
        return str(response.json()["id"])

    def output(self, session: str, code: str) -> str:
        body = {"role": "assistant", "type": "code", "format": "python", "content": code}
        response = self.http.post(f"/v1/sessions/{session}/execute", json=body)
        messages = [json.loads(line) for line in response.text.splitlines() if line]
        return "".join(m["content"] for m in messages if m.get("format") == "output")

    def delete(self, session: str) -> None:
        self.http.delete(f"/v1/sessions/{session}")

    def created(self, **body: Any) -> float:
        """Seconds from asking for a session to its first result."""
        started = time.perf_counter()
        session = self.create(**body)
        if self.output(session, "print(1)").strip() != "1":
            raise BenchError("a new session did not print 1")
        took = time.perf_counter() - started
        self.delete(session)
        return took


def egress_phase(*, quick: bool = False) -> EgressFigures:
    """Measure the egress rows on a test internet and a server of their own."""
    from ..internet import TestInternet

    requests, downloads, creations = (20, 2, 3) if quick else (100, 5, 10)
    with tempfile.TemporaryDirectory(prefix="lmc-bench-internet-") as folder:
        world = TestInternet(Path(folder)).start()
        try:
            ceiling = ("--allow-network", world.ceiling, "--egress-dns", world.dns)
            args = (*ceiling, "--pool-size", "0", "--max-sessions", "4")
            with local_server(*args) as (url, token):
                client = _Client(url, token)
                session = client.create(network=_POLICY)
                code = _probe(world.ca_pem, "allowed.test", True, requests, downloads)
                text = client.output(session, code).strip()
                client.delete(session)
                direct = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        _probe(world.ca_pem, world.allowed, False, requests, downloads),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=600,
                    check=False,
                )
                creations_policy, creations_plain = [], []
                for _ in range(creations):  # alternated: the same drift for both
                    creations_policy.append(client.created(network=_POLICY))
                    creations_plain.append(client.created())
        finally:
            world.stop()
    try:
        through = json.loads(text.splitlines()[-1])
        straight = json.loads(direct.stdout.splitlines()[-1])
    except (IndexError, ValueError):
        raise BenchError(
            f"the egress probe failed: {text[-500:]!r} {direct.stderr[-500:]!r}"
        ) from None
    return EgressFigures(
        Timing.from_seconds(through["latencies"]),
        Timing.from_seconds(straight["latencies"]),
        _mbps(through["downloads"]),
        _mbps(straight["downloads"]),
        Timing.from_seconds(creations_policy),
        Timing.from_seconds(creations_plain),
    )
