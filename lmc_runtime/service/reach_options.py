"""What sessions run in and may reach among ``lmc serve``'s options: the default
environment, the network (the switch, or the egress ceiling), the egress
gateway's DNS, and the secrets brokered on the way out."""

from __future__ import annotations

from ..egress.policy import EgressPolicy, parse_ceiling
from ..egress.resolver import parse_server
from ..egress.secret_specs import parse_secrets
from .option import Option
from .values import boolean, path, text

__all__ = ["ALLOW_NETWORK_HELP", "REACH_OPTIONS"]


def _network_allowance(raw: object) -> bool | EgressPolicy:
    """``--allow-network``: a switch, or the ceiling's comma list of entries."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, list):
        raw = ",".join(str(item) for item in raw)
    try:
        return boolean(raw)
    except ValueError:
        return parse_ceiling(text(raw))  # BadNetworkPolicy is a ValueError naming the entry


def _dns_server(raw: object) -> tuple[str, int]:
    return parse_server(text(raw))


ALLOW_NETWORK_HELP = (
    'let sessions ask for network access ({"network": true}; refused with 403 '
    "otherwise). Such a session gets a network namespace of its own whose traffic "
    "leaves through slirp4netns: the internet, but not the host's loopback services "
    "(this API among them), its own addresses, link-local addresses or its abstract "
    "unix sockets. Needs slirp4netns, iptables and a /dev/net/tun open to the "
    "sessions' users (mode 0666; as root, sessions run as uids of their own); the "
    "server refuses to start if they are missing. As root it also adds (once, and "
    "leaves) a host firewall rule rejecting traffic from the sandboxes' uid range "
    "to the host's own addresses. With ENTRIES, a comma list of names (*.example.org: "
    "any name below), addresses and networks with optional ports, e.g. "
    "'pypi.org,*.pythonhosted.org', sessions get at most that: their egress goes "
    'through the server\'s gateway, and they may narrow it ({"network": {"allow": '
    '[...], "deny": [...]}}), never widen it (403)'
)


REACH_OPTIONS: tuple[Option, ...] = (
    Option(
        "environment",
        text,
        None,
        "the environment sessions run in unless they ask for another (`lmc env create`)",
        show="none: the server's own Python",
        metavar="NAME",
    ),
    Option(
        "allow_network",
        _network_allowance,
        False,
        ALLOW_NETWORK_HELP,
        metavar="ENTRIES",
        bare=True,
    ),
    Option(
        "egress_dns",
        _dns_server,
        None,
        "the DNS server that resolves the names sessions' egress policies allow "
        "(only those names are ever asked)",
        show="the host's resolver",
        metavar="HOST:PORT",
    ),
    Option(
        "network_default",
        boolean,
        False,
        "sessions get network access unless they ask for none (implies --allow-network)",
        switch=True,
    ),
    Option(
        "secret",
        parse_secrets,
        (),
        'a secret sessions may ask for ({"secrets": ["NAME"]}): they see a placeholder '
        "in their variable NAME, which the server replaces by the value in the headers of "
        "their HTTP requests to HOST (only; and on the network's way out, never inside the "
        "sandbox). The value is the server's variable NAME, or FILE's contents; repeat the "
        "flag for more (see docs/service/secrets.md)",
        show="none",
        metavar="NAME:HOST[,HOST...][@FILE]",
        repeat=True,
    ),
    Option(
        "egress_ca_file",
        path,
        None,
        "CA certificates (PEM) trusted, besides the system's, for the hosts secrets go to",
        show="the system's CAs only",
        metavar="FILE",
    ),
)
