"""Every ``lmc`` command's ``--help`` ends with the link to its page of docs/, and each
linked page (and section) is there."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest

from lmc_runtime.cli.pages import DOCS, PAGES
from lmc_runtime.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[str]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(sub.choices)


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, "--help"] if command else ["--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_command_has_a_page_and_every_page_a_command() -> None:
    assert set(PAGES) == {"", *_commands()}
    assert {"run", "serve", "mcp", "repl", "setup", "bench"} <= set(PAGES)


@pytest.mark.parametrize("command", ["", *_commands()])
def test_help_ends_with_the_link_to_its_page(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _help(command, capsys)
    assert text.endswith(f"\ndocs: {DOCS}{PAGES[command]}\n"), text[-300:]


def test_lmc_serve_links_the_service_page(capsys: pytest.CaptureFixture[str]) -> None:
    last = _help("serve", capsys).splitlines()[-1]
    assert (
        last == "docs: https://github.com/lmc-runtime/lmc-runtime/blob/main/docs/service/index.md"
    )


@pytest.mark.parametrize("command", sorted(PAGES))
def test_each_linked_page_and_section_is_in_docs(command: str) -> None:
    page, _, section = PAGES[command].partition("#")
    path = ROOT / "docs" / page
    assert path.is_file(), f"lmc {command}: docs/{page} is missing"
    if section:
        headings = re.findall(r"^#{1,6} (.+)$", path.read_text(encoding="utf-8"), re.MULTILINE)
        assert section in {_anchor(h) for h in headings}, (page, section)


def test_the_links_are_to_the_repository_pyproject_names() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["urls"]["Homepage"] + "/blob/main/docs/" == DOCS
