"""The one egress test that reaches outside: a session allowed PyPI's two
names can ``pip install`` a small pure-Python package, and cannot reach
Debian's mirror. It runs with the host's own DNS, and is skipped, saying why,
when the host itself cannot reach PyPI (or Debian's mirror, without which the
refusal would prove nothing).
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from lmc_runtime.sandbox import sandbox_available
from tests.integration.service.server import Server, output
from tests.security.harness import ROOT, serve_as

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PYPI = ("pypi.org", "files.pythonhosted.org")
DEBIAN = "deb.debian.org"
PACKAGE, VERSION = "six", "1.16.0"


def _reachable(url: str) -> str | None:
    """Why the host cannot fetch ``url`` (a bounded request), or None."""
    try:
        status = httpx.get(url, timeout=15, follow_redirects=True).status_code
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None if status < 400 else f"HTTP {status}"


def _internal_addresses(names: tuple[str, ...]) -> list[str]:
    """The addresses ``names`` resolve to here that are not globally routable.

    Where the host reaches PyPI through a mirror or proxy at such an address,
    a policy must name the address as well: names never reach internal
    addresses otherwise."""
    found: set[str] = set()
    for name in names:
        for info in socket.getaddrinfo(name, 443, socket.AF_INET, socket.SOCK_STREAM):
            address = str(info[4][0])
            if not ipaddress.ip_address(address).is_global:
                found.add(address)
    return sorted(found)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Server, list[str]]]:
    if not sandbox_available().available:
        pytest.skip("needs bubblewrap")
    for url in (f"https://{PYPI[0]}/simple/{PACKAGE}/", f"http://{DEBIAN}/debian/"):
        problem = _reachable(url)
        if problem is not None:
            pytest.skip(f"the host cannot reach {url}: {problem}")
    allow = [*PYPI, *_internal_addresses(PYPI)]
    ceiling = ",".join([*allow, DEBIAN])
    with serve_as(ROOT, "--allow-network", ceiling, "--pool-size", "0") as running:
        yield running, allow


INSTALL = """
import json, subprocess, sys, urllib.request
done = subprocess.run(
    [sys.executable, "-m", "pip", "install", "--isolated", "--no-cache-dir",
     "--disable-pip-version-check", "--index-url", "https://pypi.org/simple",
     "--cert", "/etc/ssl/certs/ca-certificates.crt", "--target", "pkgs", "{spec}"],
    capture_output=True, text=True, timeout=50)
# a fresh interpreter without site-packages: only the folder pip filled has it
check = "import sys; sys.path.insert(0, 'pkgs'); import six; print(six.__version__)"
found = subprocess.run([sys.executable, "-I", "-S", "-c", check], capture_output=True, text=True)
version = (found.stdout + found.stderr).strip()
def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except Exception as exc:
        return type(exc).__name__ + ": " + str(exc)[:200]
print(json.dumps({{
    "rc": done.returncode, "pip": (done.stdout + done.stderr)[-3000:], "version": version,
    "debian_http": fetch("http://{debian}/debian/"),
    "debian_https": fetch("https://{debian}/debian/"),
}}))
"""


def test_a_session_allowed_pypi_installs_a_package_and_reaches_nothing_else(
    server: tuple[Server, list[str]],
) -> None:
    running, allow = server
    session = running.create(network={"allow": allow})
    try:
        code = INSTALL.format(spec=f"{PACKAGE}=={VERSION}", debian=DEBIAN)
        text = output(running.execute(session, code, timeout=120)).strip()
    finally:
        running.delete(session)
    result = json.loads(text.splitlines()[-1])
    assert result["rc"] == 0 and result["version"] == VERSION, result
    assert result["debian_http"] != 200 and result["debian_https"] != 200, result
