"""Every language runs inside the sandbox, with the default limits.

Regression: headless Chromium's threads count against the session's task
limit, and the first default (128) ended every HTML render with ``process_limit``.
"""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path

import pytest
from PIL import Image

from lmc_runtime import Computer
from lmc_runtime.sandbox import Sandbox
from lmc_runtime.sandbox.fileops import make_directory

from .conftest import Opener, needs_bwrap, run, text

pytestmark = [pytest.mark.anyio, needs_bwrap]


def _available(language: str) -> bool:
    return Computer().languages[language].available


@pytest.mark.parametrize(
    ("language", "code", "expected"),
    [
        ("javascript", "const a = 41; console.log(a + 1)", "42"),
        ("r", "cat(40 + 2)", "42"),
        ("shell", "echo $((40 + 2)); id -u", "42"),
    ],
)
async def test_language_runs_sandboxed(
    sandboxed: Opener, language: str, code: str, expected: str
) -> None:
    if not _available(language):
        pytest.skip(f"{language} is not installed here")
    async with sandboxed() as (_, computer):
        messages = await run(computer, code, language)
    assert expected in text(messages)
    assert (messages[-1].extras or {}).get("status") == "ok"


async def test_html_screenshot_renders_sandboxed_within_the_default_limits(
    sandboxed: Opener,
) -> None:
    if not _available("html"):
        pytest.skip("chromium is not installed here")
    async with sandboxed() as (_, computer):
        messages = await run(computer, "<h1 style='color:red'>hi</h1>", "html")
    assert (messages[-1].extras or {}).get("status") == "ok", text(messages)
    images = [m for m in messages if m.type == "image"]
    assert len(images) == 1
    Image.open(io.BytesIO(base64.b64decode(str(images[0].content)))).verify()


async def test_regression_a_sandboxed_shell_read_reaches_the_input_callback(
    sandboxed: Opener,
) -> None:
    """Regression: a shell run with an input callback read a terminal of the host's
    (a link to its /dev/pts entry), which a sandbox, with a /dev of its own, cannot
    open: every read failed with 'No such file or directory' and the callback was
    never asked. In a sandbox the run reads a FIFO again."""
    asked: list[str] = []

    def answer(prompt: str) -> str:
        asked.append(prompt)
        return "alice"

    sandbox: Sandbox
    async with sandboxed() as (sandbox, _):
        # A second Computer of the sandbox: folders of its own.
        (sandbox.control_dir / "input").mkdir()
        make_directory(sandbox.shared_dir, "input", parents=False, owner=sandbox.owner)
        folders = {"work_dir": sandbox.control_dir / "input"}
        folders["shared_dir"] = sandbox.shared_dir / "input"
        async with sandbox.computer(on_input=answer, **folders) as computer:
            messages = await run(computer, "read -p 'name? ' x\necho got $x", "shell")
    assert "got alice" in text(messages), text(messages)
    assert asked and (messages[-1].extras or {}).get("status") == "ok"


def _watchers() -> set[int]:
    """This process's lifeline watchers (``_lifeline.py`` children)."""
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes()
            ppid = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"_lifeline.py" in argv:
            found.add(int(entry.name))
    return found


async def test_a_sandboxed_computer_starts_no_watcher_of_its_own(sandboxed: Opener) -> None:
    """A sandbox's supervisor already ends its processes with the runtime process, so a
    sandboxed Computer (one per session under lmc serve) starts no lifeline watcher:
    one was a resident Python of about 9 MB per session, outside its cgroup."""
    before = _watchers()
    async with sandboxed() as (_, computer):
        messages = await run(computer, "echo hi", "shell")
        during = _watchers()
    assert "hi" in text(messages)
    assert during <= before
