"""`lmc setup`: installs missing Debian packages as root, else says what to install."""

from __future__ import annotations

from lmc_runtime.sysdeps import SystemPackage, ensure_system_packages, missing_packages

ABSENT = SystemPackage("lmc-no-such-package-xyz", "lmc-no-such-binary-xyz", "testing")
PRESENT = SystemPackage("coreutils", "ls", "everything")


def test_present_packages_are_not_missing() -> None:
    assert missing_packages([PRESENT]) == []
    assert missing_packages([ABSENT, PRESENT]) == [ABSENT]


def test_without_root_it_prints_one_line_naming_the_install_command() -> None:
    said: list[str] = []
    ran: list[list[str]] = []
    ok = ensure_system_packages(
        [ABSENT], say=said.append, run=lambda a: ran.append(a) or 0, is_root=False
    )
    assert not ok and ran == []
    assert len(said) == 1
    assert "sudo apt-get install -y lmc-no-such-package-xyz" in said[0] and "testing" in said[0]


def test_as_root_it_runs_apt_get_update_then_install() -> None:
    said: list[str] = []
    ran: list[list[str]] = []
    ensure_system_packages(
        [ABSENT], say=said.append, run=lambda a: ran.append(a) or 0, is_root=True
    )
    assert ran[0][:2] == ["apt-get", "update"]
    assert ran[1][:3] == ["apt-get", "install", "-y"] and ran[1][-1] == "lmc-no-such-package-xyz"


def test_a_failed_install_is_reported_not_raised() -> None:
    said: list[str] = []
    ok = ensure_system_packages([ABSENT], say=said.append, run=lambda a: 100, is_root=True)
    assert not ok and "apt-get install failed (exit 100)" in said[-1]


def test_nothing_missing_means_nothing_run() -> None:
    said: list[str] = []
    ran: list[list[str]] = []
    assert ensure_system_packages(
        [PRESENT], say=said.append, run=lambda a: ran.append(a) or 0, is_root=True
    )
    assert ran == [] and "present" in said[0]
