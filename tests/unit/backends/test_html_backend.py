"""lmc_runtime.backends.html: finding Chromium and the offline command line it runs."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from lmc_runtime.backends.html import HtmlBackend, chromium_argv, find_chromium


def executable(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_first_known_name_on_the_path_is_used(tmp_path: Path) -> None:
    executable(tmp_path, "google-chrome")
    chromium_browser = executable(tmp_path, "chromium-browser")
    assert find_chromium(path=str(tmp_path)) == str(chromium_browser)


def test_a_given_chromium_is_the_only_one_considered(tmp_path: Path) -> None:
    executable(tmp_path / "bin", "chromium")
    assert find_chromium(str(tmp_path / "missing" / "chromium"), str(tmp_path / "bin")) is None
    special = executable(tmp_path / "opt", "my-chrome")
    assert find_chromium(str(special), str(tmp_path / "bin")) == str(special)


def test_no_chromium_anywhere_is_none(tmp_path: Path) -> None:
    assert find_chromium(path=str(tmp_path)) is None


def test_html_is_available_even_without_chromium(tmp_path: Path) -> None:
    backend = HtmlBackend(chromium=str(tmp_path / "nothing"))
    assert backend.availability().available
    assert backend.find_chromium() is None


def test_the_command_line_is_headless_offline_and_uses_a_fresh_profile(tmp_path: Path) -> None:
    page, png, profile = tmp_path / "page.html", tmp_path / "shot.png", tmp_path / "profile"
    argv = chromium_argv("/usr/bin/chromium", page, png, profile, (800, 600))
    assert argv[0] == "/usr/bin/chromium"
    assert argv[-1] == page.as_uri()
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-quic",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        f"--user-data-dir={profile}",
        "--window-size=800,600",
        f"--screenshot={png}",
    ):
        assert flag in argv


@pytest.mark.parametrize("name", ["a b.html", "ü.html", "#hash?.html"])
def test_page_paths_with_odd_characters_become_valid_file_urls(tmp_path: Path, name: str) -> None:
    url = chromium_argv("chromium", tmp_path / name, tmp_path / "s.png", tmp_path, (1, 1))[-1]
    assert url.startswith("file:///") and " " not in url and "#" not in url and "?" not in url
