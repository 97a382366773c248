"""A secret end to end in a real sandbox under an egress policy, with the real
gateway and the broker: the session's code sends its placeholder with curl
and Python's urllib; the secret's host receives the value, another host the
placeholder; the value is nowhere in the sandbox's processes' memory (read
from the host, /proc/<pid>/mem), its files, or the server's logs."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer
from lmc_runtime.egress.gateway import EgressGateway, GatewayLimits
from lmc_runtime.egress.secret_specs import parse_secret
from lmc_runtime.egress.secrets import BrokeredGateway, SecretBroker, upstream_context
from lmc_runtime.sandbox import Sandbox, SandboxPolicy, sandbox_available
from lmc_runtime.sandbox.egress_netns import egress_available
from lmc_runtime.sandbox.network import host_addresses
from lmc_runtime.sandbox.policy import EgressTrust

from .echo_upstream import Upstream, echo_upstream
from .harness import StaticResolver, policy
from .scan import files_holding, memory_holds, pids_of_uids

pytestmark = [
    pytest.mark.integration,
    pytest.mark.anyio,
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not sandbox_available().available, reason=f"no sandbox: {sandbox_available().reason}"
    ),
]

VALUE = "sk-sandbox-7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a29"
API, OTHER = "api.test", "other.test"


def outward_address() -> str | None:
    """The host's address towards the outside (no packet is sent): the upstreams
    listen there, an address of the host that no test tears down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return address if address in host_addresses() and not address.startswith("127.") else None


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder under /tmp that the sandbox's own host uid may pass through (not
    pytest's tmp_path: a pytest starting meanwhile closes its parent to others)."""
    path = Path(tempfile.mkdtemp(prefix="lmc-secrets-", dir="/tmp"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def upstreams(folder: Path) -> Iterator[dict[str, Upstream]]:
    address = outward_address()
    if address is None:
        pytest.skip("the host has no address but loopback")
    with (
        echo_upstream(API, folder, host=address) as api,
        echo_upstream(OTHER, folder, host=address) as other,
    ):
        yield {API: api, OTHER: other}


CODE = """
import json, os, ssl, subprocess, urllib.request
token = os.environ["API_KEY"]
def curl(url, *extra):
    done = subprocess.run(
        ["curl", "-sS", "--max-time", "30", *extra, "-H", "Authorization: Bearer " + token, url],
        capture_output=True, text=True, timeout=60,
    )
    return done.stdout + done.stderr
def python(url):
    request = urllib.request.Request(url, headers={{"X-Api-Key": token}})
    try:
        return urllib.request.urlopen(request, timeout=30).read().decode()
    except Exception as exc:
        return "FAILED " + repr(exc)
result = {{
    "api": curl("https://{api}:{api_port}/quiet"),
    "python": python("https://{api}:{api_port}/quiet/python"),
    "other": curl("https://{other}:{other_port}/quiet", "--cacert", "other-ca.pem"),
    "trust": [os.environ.get(n) for n in ("SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS")],
    "system_bundle_has_ca": open("/run/egress/ca.pem").read().strip()
        in open("/etc/ssl/certs/ca-certificates.crt").read(),
}}
print("RESULT" + json.dumps(result))
"""


def sandbox_pids(sandbox: Sandbox) -> list[int]:
    """The processes of the sandbox: its user's on the host (or its cgroup's)."""
    identity = sandbox.identity
    if identity is not None:
        return pids_of_uids({identity.uid})
    cgroup = sandbox._cgroup
    return cgroup.pids() if cgroup is not None else []


async def _run(computer: Computer, code: str) -> str:
    out = []
    async for message in computer.arun("python", code):
        if message.type == "console" and message.format == "output":
            out.append(str(message.content))
    return "".join(out)


async def test_the_value_reaches_its_host_and_never_the_sandbox(
    folder: Path, upstreams: dict[str, Upstream], caplog: pytest.LogCaptureFixture
) -> None:
    available = egress_available()
    if not available.available:
        pytest.skip(available.reason or "no egress namespace here")
    caplog.set_level(logging.DEBUG)
    api, other = upstreams[API], upstreams[OTHER]
    assert api.ca_file is not None and other.ca_file is not None
    trusted = folder / "upstream-cas.pem"
    trusted.write_bytes(api.ca_file.read_bytes())
    spec = parse_secret(f"API_KEY:{API}:{api.port}")
    broker = SecretBroker([spec], {"API_KEY": VALUE.encode()}, upstream=upstream_context(trusted))
    trust = EgressTrust(*broker.ca.write_files(folder / "egress"))
    address = api.host
    allowed = policy([API, OTHER, f"{address}/32"])
    gateway = EgressGateway(
        StaticResolver({API: [address], OTHER: [address]}),  # type: ignore[arg-type]
        limits=GatewayLimits(head_timeout=10.0, dial_timeout=10.0, idle_timeout=60.0),
    )
    root = folder / "session"
    token = broker.open(root.name, ["API_KEY"])["API_KEY"]
    session_policy = SandboxPolicy(
        network=allowed, env={"API_KEY": token}, secrets=("API_KEY",), trust=trust
    )
    sandbox = Sandbox(root, session_policy, egress=BrokeredGateway(gateway, broker))
    await sandbox.start()
    try:
        shutil.copy(other.ca_file, sandbox.work_dir / "other-ca.pem")
        os.chmod(sandbox.work_dir / "other-ca.pem", 0o644)
        async with sandbox.computer() as computer:
            code = CODE.format(api=API, api_port=api.port, other=OTHER, other_port=other.port)
            output = await _run(computer, code)
            lines = [line for line in output.splitlines() if line.startswith("RESULT")]
            assert lines, output
            result = json.loads(lines[0][len("RESULT") :])
            pids = sandbox_pids(sandbox)
            held = [memory_holds(pid, [token.encode(), VALUE.encode()]) for pid in pids]
            files = files_holding(sandbox.root / "disk", [VALUE.encode()])
    finally:
        await sandbox.aclose()
        await gateway.aclose()
    assert result["api"] == "nothing to see\n", result
    assert result["python"] == "nothing to see\n", result
    assert result["other"] == "nothing to see\n", result
    assert result["trust"] == ["/run/egress/ca-bundle.pem", "/run/egress/ca.pem"], result
    assert result["system_bundle_has_ca"] is True, result
    # The secret's host got the value from curl and from Python; the other, the placeholder.
    assert api.seen.all().count(f"Bearer {VALUE}".encode()) == 1
    assert api.seen.all().count(f"X-Api-Key: {VALUE}".encode()) == 1
    assert token.encode() not in api.seen.all()
    assert f"Bearer {token}".encode() in other.seen.all()
    assert VALUE.encode() not in other.seen.all()
    # The scan reads the sandbox's memory (the placeholder is there), and the value is not.
    assert pids and any(token.encode() in found for found in held), (pids, held)
    assert not any(VALUE.encode() in found for found in held), (pids, held)
    assert files == []
    assert not [r for r in caplog.records if VALUE in r.getMessage()]
