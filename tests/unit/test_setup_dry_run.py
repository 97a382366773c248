"""``lmc setup --dry-run`` says every change setup would make to the host and makes none;
``lmc setup --help`` lists those changes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from lmc_runtime.cli.parser import build_parser
from lmc_runtime.sandbox.hostprep import HostPaths, prepare_host
from lmc_runtime.sysdeps import (
    SYSTEM_PACKAGES,
    SystemPackage,
    ensure_node_packages,
    ensure_system_packages,
)

ABSENT = SystemPackage("lmc-no-such-package-xyz", "lmc-no-such-binary-xyz", "testing")

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="host preparation is done as root")


def _host(tmp_path: Path) -> HostPaths:
    """A host in miniature: subuid/subgid files without the range, a tun device file
    of mode 0600, and a bound path under a folder others may not pass through."""
    subuid, subgid = tmp_path / "subuid", tmp_path / "subgid"
    subuid.write_text("someone:100000:65536\n")
    subgid.write_text("someone:100000:65536\n")
    tun = tmp_path / "tun"
    tun.write_text("")
    tun.chmod(0o600)
    closed = tmp_path / "closed"
    (closed / "lib").mkdir(parents=True)
    closed.chmod(0o700)
    return HostPaths(subid_files=(subuid, subgid), tun=tun, bound=(closed / "lib",))


def _state(host: HostPaths) -> list[object]:
    return [
        *(path.read_text() for path in host.subid_files),
        stat.S_IMODE(host.tun.stat().st_mode),
        *(stat.S_IMODE(path.parent.stat().st_mode) for path in host.bound),
    ]


@root_only
def test_a_dry_run_of_host_preparation_lists_every_change_and_makes_none(tmp_path: Path) -> None:
    """Guards the dry run: the subuid range, /dev/net/tun's mode and the folders'
    search permission are each said, and the host stays as it was."""
    host = _host(tmp_path)
    before = _state(host)
    said: list[str] = []
    prepare_host(said.append, dry_run=True, paths=host)
    assert _state(host) == before
    text = "\n".join(said)
    for path in host.subid_files:
        assert f"would add lmc-sandbox:1500000:65536 to {path}" in text
    assert f"would make {host.tun} mode 0666" in text
    assert f"would let sandbox users pass through {tmp_path / 'closed'} (o+x)" in text


@root_only
def test_host_preparation_makes_the_changes_its_dry_run_lists(tmp_path: Path) -> None:
    host = _host(tmp_path)
    prepare_host(lambda line: None, paths=host)
    assert all("lmc-sandbox:1500000:65536" in path.read_text() for path in host.subid_files)
    assert stat.S_IMODE(host.tun.stat().st_mode) == 0o666
    assert stat.S_IMODE((tmp_path / "closed").stat().st_mode) == 0o701
    said: list[str] = []
    prepare_host(said.append, dry_run=True, paths=host)
    assert said == ["lmc setup: the host is ready for sandboxes; nothing would change"]


def test_a_dry_run_names_the_packages_apt_get_would_install_and_runs_nothing() -> None:
    said: list[str] = []
    ran: list[list[str]] = []
    ok = ensure_system_packages(
        [ABSENT], say=said.append, run=lambda a: ran.append(a) or 0, is_root=True, dry_run=True
    )
    assert ran == [] and not ok
    assert said == ["lmc setup: would run apt-get install -y lmc-no-such-package-xyz (for testing)"]


def test_a_dry_run_names_the_npm_packages_and_runs_nothing(tmp_path: Path) -> None:
    lock = {"packages": {"node_modules/typescript": {"version": "5.9.3"}}}
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))
    said: list[str] = []
    ran: list[list[str]] = []
    ok = ensure_node_packages(
        tmp_path,
        needed_for="TypeScript",
        say=said.append,
        run=lambda a, c: ran.append(a) or 0,
        dry_run=True,
    )
    assert ran == [] and not ok
    assert said == [
        f"lmc setup: would run npm ci in {tmp_path} (typescript@5.9.3, for TypeScript) "
        "and make its node_modules readable by all users"
    ]
    assert not (tmp_path / "node_modules").exists()


def test_lmc_setup_help_lists_what_it_changes_on_the_host(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["setup", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for named in ("/etc/subuid", "/etc/subgid", "/dev/net/tun", "0666", "o+x", "--dry-run"):
        assert named in text, named
    assert "apt-get" in text and "npm ci" in text and "javac" in text
    assert all(package.name in text for package in SYSTEM_PACKAGES)


def test_lmc_setup_takes_dry_run() -> None:
    assert build_parser().parse_args(["setup", "--dry-run"]).dry_run
    assert not build_parser().parse_args(["setup"]).dry_run
