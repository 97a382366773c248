"""The docs site builds with no warning, and the README stays a short front door into it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .pages import DOCS, README, ROOT, anchors, links, pages

#: The README's length at most: what a newcomer reads before the site.
README_MAX_LINES = 250


@pytest.mark.skipif(shutil.which("mkdocs") is None, reason="mkdocs: pip install -e '.[docs]'")
def test_the_site_builds_strict(tmp_path: Path) -> None:
    """Guards the site: a broken link, anchor, nav entry or docstring fails the build."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "index.html").is_file()
    assert (tmp_path / "reference" / "computer" / "index.html").is_file()


def test_the_readme_is_at_most_250_lines() -> None:
    """Guards the README's size: details belong in docs/, the README links to them."""
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines"


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """Guards the README's "Two commands": its test command is .ci/run's last line."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    readme = README.read_text(encoding="utf-8")
    assert "## Two commands" in readme
    assert f"```sh\n{ci}\n```" in readme


def test_the_readme_shows_a_per_run_timeout() -> None:
    """Guards the newcomer's path to timeouts: the README's library quickstart shows
    ``timeout=`` and links to the library guide's Timeouts section."""
    readme = README.read_text(encoding="utf-8")
    quickstart = readme.split("```python", 1)[1].split("```", 1)[0]
    assert "timeout=" in quickstart
    assert "docs/library.md#timeouts" in links(README)


def test_every_local_link_of_the_readme_and_the_pages_resolves() -> None:
    """Guards links into the docs from the README (which mkdocs does not check) and
    between pages: the file exists and so does the heading an anchor names."""
    broken = []
    for page in pages():
        for target in links(page):
            if "://" in target or target.startswith(("mailto:", "#")):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_the_readme_links_into_every_part_of_the_docs() -> None:
    """Guards the README as the site's front door: a link to each top-level page."""
    linked = {
        (README.parent / t.partition("#")[0]).resolve() for t in links(README) if "://" not in t
    }
    wanted = {
        DOCS / name
        for name in (
            "getting-started.md",
            "library.md",
            "languages.md",
            "messages.md",
            "cli.md",
            "service/index.md",
            "integrations.md",
            "performance.md",
            "reliability.md",
            "architecture.md",
            "reference/index.md",
        )
    }
    assert wanted - linked == set()
