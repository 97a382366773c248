"""The network helper's command line, the host addresses it rejects and its rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.errors import SandboxUnavailable
from lmc_runtime.sandbox import network
from lmc_runtime.sandbox.egress_netns import EGRESS_HELPER
from lmc_runtime.sandbox.launch import EXEC_WRAPPER, SandboxLauncher
from lmc_runtime.sandbox.network import (
    NETNS_HELPER,
    NetworkTools,
    blocked_networks,
    find_programs,
    host_addresses,
    netns_command,
    required,
)
from lmc_runtime.service.settings import ServiceSettings

from .scripts import load_script

FIB_TRIE = """\
Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
Local:
     |-- 192.0.2.2
        /32 host LOCAL
     |-- 172.17.0.1
        /32 host LOCAL
"""

TOOLS = NetworkTools("/usr/bin/slirp4netns", "/sbin/iptables-restore", "/sbin/ip6tables-restore")


def test_host_addresses_are_the_local_and_broadcast_ones(tmp_path: Path) -> None:
    trie = tmp_path / "fib_trie"
    trie.write_text(FIB_TRIE)
    assert host_addresses(trie) == [
        "127.0.0.1",
        "127.255.255.255",
        "192.0.2.2",
        "192.0.2.255",
        "172.17.0.1",
    ]
    assert host_addresses(tmp_path / "missing") == []


def test_blocked_networks_cover_loopback_link_local_and_the_host() -> None:
    blocked = blocked_networks(["127.0.0.1", "192.0.2.2", "172.17.0.1", "192.0.2.2"])
    assert blocked[:4] == ["0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "10.0.2.2/32"]
    assert blocked[4:] == ["192.0.2.2/32", "172.17.0.1/32"]


def test_the_helper_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network, "host_addresses", lambda: ["192.0.2.2"])
    argv = netns_command(TOOLS)
    assert argv[:4] == [sys.executable, "-I", "-S", str(NETNS_HELPER)]
    assert argv[argv.index("--slirp4netns") + 1] == TOOLS.slirp4netns
    assert "192.0.2.2/32" in argv and argv[-1] == "--bwrap-env"
    assert "--bwrap-env" not in netns_command(TOOLS, bwrap_env=False)


def test_a_network_session_starts_bwrap_through_the_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(network, "find_network_tools", lambda: TOOLS)
    argv = SandboxLauncher(bwrap="/usr/bin/bwrap", network=True).wrap(["true"])
    assert argv[3] == str(EXEC_WRAPPER)
    helper = argv.index(str(NETNS_HELPER))
    bwrap = argv.index("/usr/bin/bwrap")
    # The outer wrapper leaves the environment to the helper, which hands it to bwrap.
    assert "--bwrap-env" not in argv[:helper] and "--bwrap-env" in argv[helper:bwrap]
    assert argv[bwrap - 1] == "--" and "--share-net" in argv[bwrap:]
    assert "--unshare-all" in argv[bwrap:]
    plain = SandboxLauncher(bwrap="/usr/bin/bwrap").wrap(["true"])
    assert str(NETNS_HELPER) not in plain and "--share-net" not in plain


def test_missing_tools_are_a_sandbox_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmc_runtime.errors import SandboxUnavailable

    monkeypatch.setattr(network, "find_network_tools", lambda: None)
    with pytest.raises(SandboxUnavailable, match="slirp4netns"):
        SandboxLauncher(bwrap="/usr/bin/bwrap", network=True).wrap(["true"])


def test_the_helper_rules_reject_the_host_and_all_ipv6() -> None:
    helper: Any = load_script(NETNS_HELPER, "_netns")
    rules = helper._rules4(["127.0.0.0/8", "192.0.2.2/32"])
    assert rules.splitlines() == [
        "*filter",
        ":OUTPUT ACCEPT [0:0]",
        "-A OUTPUT -o lo -j ACCEPT",
        "-A OUTPUT -d 127.0.0.0/8 -j REJECT",
        "-A OUTPUT -d 192.0.2.2/32 -j REJECT",
        "COMMIT",
    ]
    assert "-A OUTPUT -j REJECT" in helper._RULES6


def test_network_default_needs_allow_network() -> None:
    data = Path("/tmp/lmc-data")  # short: kernels' socket paths live inside
    with pytest.raises(ValueError, match="allow_network"):
        ServiceSettings(data_dir=data, token="t", network_default=True)
    ServiceSettings(data_dir=data, token="t", network_default=True, allow_network=True)


def test_the_host_rule_covers_the_whole_uid_range() -> None:
    rule = network.host_firewall_rule(1_500_000, 65_536)
    assert rule[0] == "OUTPUT" and rule[-2:] == ["-j", "REJECT"]
    assert rule[rule.index("--uid-owner") + 1] == "1500000-1565535"
    assert rule[rule.index("--dst-type") + 1] == "LOCAL"


def test_programs_are_found_as_absolute_paths_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tmp_path / "bin" / "some-tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "bin")  # a relative PATH entry: still an absolute path back
    assert find_programs("some-tool") == [str(tool)]
    assert find_programs("some-tool", "no-such-tool-here") is None


def test_tools_not_found_are_refused_with_what_to_install() -> None:
    tools = NetworkTools("/a", "/b", "/c")
    assert required(tools, "unused") is tools
    with pytest.raises(SandboxUnavailable, match="apt-get install slirp4netns"):
        required(None, "network access needs slirp4netns (apt-get install slirp4netns)")


def test_the_helpers_read_their_options_and_command() -> None:
    helper: Any = load_script(NETNS_HELPER, "_netns")
    args = ["--ip", "/sbin/ip", "--block", "a", "--bwrap-env", "--block", "b", "--", "bwrap", "x"]
    options, argv = helper.parse(args, "_x.py", ("--ip",))
    assert options == {
        "--block": ["a", "b"],
        "--timeout": ["30"],
        "--ip": ["/sbin/ip"],
        "--bwrap-env": [],
    }
    assert argv == ["bwrap", "x"]


@pytest.mark.parametrize(
    ("helper", "args", "says"),
    [
        (NETNS_HELPER, ["--slirp4netns", "/x", "--", "bwrap"], "--iptables-restore is required"),
        (NETNS_HELPER, ["--slirp4netns"], "usage: _netns.py [options] -- bwrap"),
        (EGRESS_HELPER, ["--ip", "/x", "--timeout"], "usage: _egressns.py [options] -- bwrap"),
        (EGRESS_HELPER, ["--ip", "--"], "--ip needs a value"),
        (EGRESS_HELPER, ["--ip", "/x", "--", "bwrap"], "--iptables-restore is required"),
    ],
)
def test_a_helper_given_wrong_options_says_what_is_wrong(
    helper: Path, args: list[str], says: str
) -> None:
    ended = subprocess.run(
        [sys.executable, "-I", "-S", str(helper), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ended.returncode == 127
    assert says in ended.stderr
