"""The egress policy: its entries, matching, internal addresses and narrowing."""

from __future__ import annotations

import ipaddress

import pytest

from lmc_runtime.egress.entries import embedded_ipv4, is_internal, parse_entry
from lmc_runtime.egress.policy import (
    EgressPolicy,
    narrow,
    parse_ceiling,
    parse_entries,
    parse_session_network,
)
from lmc_runtime.service.errors import BadNetworkPolicy, NetworkNotAllowed

#: A host with a public address of its own (as a cloud VM has).
HOST = frozenset({ipaddress.ip_address("151.101.77.77"), ipaddress.ip_address("2a04:4e42::77")})


def policy(allow: list[str], deny: list[str] = ()) -> EgressPolicy:  # type: ignore[assignment]
    return EgressPolicy(parse_entries(allow, "allow"), parse_entries(list(deny), "deny"), HOST)


@pytest.mark.parametrize(
    ("text", "kind", "port"),
    [
        ("pypi.org", "name", None),
        ("PyPI.org.", "name", None),
        ("pypi.org:443", "name", 443),
        ("*.pythonhosted.org", "wildcard", None),
        ("*", "any", None),
        ("*:443", "any", 443),
        ("10.0.0.0/8:5432", "network", 5432),
        ("93.184.216.7", "network", None),
        ("2001:db8::1", "network", None),
        ("2001:db8::/32", "network", None),
        ("[2001:db8::1]:443", "network", 443),
        ("[2001:db8::/32]", "network", None),
        ("localhost", "name", None),
        ("_acme.example.com", "name", None),
    ],
)
def test_entries_parse(text: str, kind: str, port: int | None) -> None:
    entry = parse_entry(text)
    assert (entry.kind, entry.port) == (kind, port)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "pypi.org:",
        "pypi.org:0",
        "pypi.org:65536",
        "pypi.org:http",
        "10.0.0.1/8",  # host bits set
        "10.0.0.0/33",
        "300.1.1.1",
        "1.2.3",
        "2001:db8::1::443",
        "[2001:db8::1",
        "[2001:db8::1]443",
        "[pypi.org]:443",
        "*.",
        "**.example.com",
        "example.*",
        "exa mple.com",
        "-bad.example.com",
        "a" * 64 + ".com",
        "http://pypi.org",
        "pypi.org/simple",
    ],
)
def test_bad_entries_are_refused_by_name(text: str) -> None:
    with pytest.raises(BadNetworkPolicy) as caught:
        parse_entry(text)
    assert repr(text.strip())[:20] in str(caught.value) or not text.strip()


def test_non_string_entries_are_refused() -> None:
    with pytest.raises(BadNetworkPolicy):
        parse_entry(443)
    with pytest.raises(BadNetworkPolicy):
        parse_entries("pypi.org", "allow")


def test_wildcards_match_subdomains_not_the_apex() -> None:
    p = policy(["*.pythonhosted.org", "pypi.org:443"])
    assert p.allows_name("files.pythonhosted.org", 443)
    assert p.allows_name("a.b.pythonhosted.org", 80)
    assert not p.allows_name("pythonhosted.org", 443)
    assert not p.allows_name("evilpythonhosted.org", 443)
    assert p.allows_name("PYPI.org.", 443)
    assert not p.allows_name("pypi.org", 80)
    assert not p.allows_name("pypi.org.evil.com", 443)
    assert not p.allows_name("1.2.3.4", 443)


def test_deny_wins_over_allow() -> None:
    p = policy(["*.example.com", "0.0.0.0/0"], deny=["secret.example.com", "93.184.216.0/24:22"])
    assert p.allows_name("www.example.com", 443)
    assert not p.allows_name("secret.example.com", 443)
    assert p.allows_address("93.184.216.5", 443)
    assert not p.allows_address("93.184.216.5", 22)
    assert not p.allows_resolved("www.example.com", "93.184.216.5", 22)
    # denied through an IPv6 form carrying the IPv4 address
    assert not p.allows_address("::ffff:203.0.113.5", 22)


def test_ip_literals_need_an_address_entry() -> None:
    p = policy(["pypi.org", "93.184.216.0/24:443", "[2001:db8:1::/48]"])
    assert not p.allows_address("151.101.0.223", 443)
    assert p.allows_address("93.184.216.9", 443)
    assert not p.allows_address("93.184.216.9", 80)
    assert not p.allows_address("2001:db8::1", 443)
    assert not p.allows_address("not an address", 443)


INTERNAL = [
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "240.0.0.1",
    "::1",
    "::",
    "fe80::1",
    "fd00::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "::127.0.0.1",
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1 (is_global says True)
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1 (is_global says True)
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "151.101.77.77",  # the host's own
    "2a04:4e42::77",
    "203.0.113.5",  # documentation ranges
    "2001:db8::1",
]


@pytest.mark.parametrize("address", INTERNAL)
def test_names_never_reach_internal_addresses(address: str) -> None:
    p = policy(["*", "0.0.0.0/0", "::/0"])
    assert is_internal(ipaddress.ip_address(address), HOST)
    assert not p.allows_resolved("www.example.com", address, 443)
    assert not p.allows_address(address, 443)


def test_global_addresses_are_not_internal() -> None:
    for text in (
        "151.101.0.223",
        "93.184.216.34",
        "2a04:4e42::223",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
    ):
        assert not is_internal(ipaddress.ip_address(text), HOST), text
    p = policy(["pypi.org"])
    assert p.allows_resolved("pypi.org", "151.101.0.223", 443)
    assert not p.allows_resolved("other.org", "151.101.0.223", 443)


def test_embedded_ipv4_forms() -> None:
    def forms(text: str) -> list[str]:
        return [str(a) for a in embedded_ipv4(ipaddress.ip_address(text))]

    assert forms("::ffff:10.0.0.1") == ["10.0.0.1"]
    assert forms("2002:0a00:0001::") == ["10.0.0.1"]
    assert "192.0.2.45" in forms("2001:0:4136:e378:8000:63bf:3fff:fdd2")
    assert forms("64:ff9b::a00:1") == ["10.0.0.1"]
    assert forms("2a04:4e42::223") == []
    assert forms("10.0.0.1") == []


def test_internal_addresses_listed_explicitly_are_reached() -> None:
    p = policy(["db.internal", "10.0.0.0/8:5432", "127.0.0.1:8080", "151.101.77.77:9000"])
    assert p.allows_resolved("db.internal", "10.2.3.4", 5432)
    assert p.allows_address("10.2.3.4", 5432)
    assert not p.allows_address("10.2.3.4", 22)
    assert not p.allows_resolved("db.internal", "10.2.3.4", 22)
    assert p.allows_address("127.0.0.1", 8080)
    assert p.allows_address("::ffff:127.0.0.1", 8080)
    assert not p.allows_address("127.0.0.2", 8080)
    assert p.allows_address("151.101.77.77", 9000)
    # a wide network names no internal address
    wide = policy(["0.0.0.0/0", "151.101.77.0/24"])
    assert not wide.allows_address("10.0.0.1", 443)
    assert not wide.allows_address("151.101.77.77", 443)
    assert wide.allows_address("151.101.77.78", 443)


def test_the_ceiling_parses_from_a_comma_list() -> None:
    ceiling = parse_ceiling(" pypi.org, *.pythonhosted.org ,registry.npmjs.org")
    assert [e.text for e in ceiling.allow] == [
        "pypi.org",
        "*.pythonhosted.org",
        "registry.npmjs.org",
    ]
    with pytest.raises(BadNetworkPolicy, match="nope!"):
        parse_ceiling("pypi.org,nope!")
    with pytest.raises(BadNetworkPolicy):
        parse_ceiling(" , ")


@pytest.mark.parametrize(
    ("asked", "ok"),
    [
        ("pypi.org", True),
        ("pypi.org:443", True),
        ("files.pythonhosted.org", True),
        ("*.pythonhosted.org", True),
        ("*.a.pythonhosted.org", True),
        ("pythonhosted.org", False),
        ("*.org", False),
        ("*", False),
        ("evil.com", False),
        ("10.1.0.0/16", True),
        ("10.1.2.3:5432", True),
        ("10.0.0.0/7", False),
        ("11.0.0.1", False),
        ("2001:db8::/48", True),
        ("2001::/16", False),
        ("api.example.com:443", True),
        ("api.example.com:80", False),
        ("api.example.com", False),
    ],
)
def test_a_session_narrows_never_widens(asked: str, ok: bool) -> None:
    ceiling = parse_ceiling(
        "pypi.org,*.pythonhosted.org,10.0.0.0/8,2001:db8::/32,api.example.com:443"
    )
    if ok:
        got = narrow(ceiling, [parse_entry(asked)])
        assert [e.text for e in got.allow] == [asked]
    else:
        with pytest.raises(NetworkNotAllowed, match=repr(asked).replace("*", r"\*")):
            narrow(ceiling, [parse_entry(asked)])


def test_session_network_values() -> None:
    ceiling = parse_ceiling("pypi.org,*.pythonhosted.org")
    assert parse_session_network(False, ceiling, True) is False
    assert parse_session_network(None, None, False) is False
    assert parse_session_network(True, None, True) is True
    assert parse_session_network(True, ceiling, True) is ceiling
    with pytest.raises(NetworkNotAllowed, match="--allow-network"):
        parse_session_network(True, None, False)
    with pytest.raises(NetworkNotAllowed):
        parse_session_network({"allow": ["pypi.org"]}, None, False)
    got = parse_session_network({"allow": ["pypi.org"], "deny": ["pypi.org:80"]}, ceiling, True)
    assert isinstance(got, EgressPolicy)
    assert got.allows_name("pypi.org", 443) and not got.allows_name("pypi.org", 80)
    assert not got.allows_name("files.pythonhosted.org", 443)
    deny_only = parse_session_network({"deny": ["*.pythonhosted.org"]}, ceiling, True)
    assert isinstance(deny_only, EgressPolicy)
    assert deny_only.allows_name("pypi.org", 443)
    assert not deny_only.allows_name("files.pythonhosted.org", 443)
    free = parse_session_network({"deny": ["evil.com"]}, None, True)
    assert isinstance(free, EgressPolicy) and free.allows_name("good.com", 443)
    assert free.describe() == {"allow": ["*"], "deny": ["evil.com"]}
    with pytest.raises(NetworkNotAllowed, match=r"evil\.com"):
        parse_session_network({"allow": ["evil.com"]}, ceiling, True)
    for bad in ("yes", 1, {"allow": "pypi.org"}, {"allow": [], "other": 1}, {"allow": ["x y"]}):
        with pytest.raises(BadNetworkPolicy):
            parse_session_network(bad, ceiling, True)


def test_some_port_is_what_dns_asks() -> None:
    p = policy(["pypi.org:443", "db.internal", "10.0.0.5:5432"], deny=["db.internal:22"])
    assert p.allows_name("pypi.org", None)
    assert p.allows_name("db.internal", None)  # denied at one port only
    assert p.allows_resolved("db.internal", "10.0.0.5", None)
    assert not p.allows_resolved("db.internal", "10.0.0.6", None)
    assert not policy(["pypi.org"], deny=["pypi.org"]).allows_name("pypi.org", None)
