"""lmc_runtime.backends.applescript: availability depends on the platform (injected here)
and on finding osascript; return codes become sentences."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import anyio
import pytest

from lmc_runtime.backends.applescript import AppleScriptBackend
from lmc_runtime.backends.base import SessionSettings
from lmc_runtime.errors import BackendUnavailable
from lmc_runtime.procs import describe_exit


def fake_osascript(folder: Path) -> Path:
    script = folder / "osascript"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.mark.parametrize("system", ["linux", "win32", "freebsd14"])
def test_anywhere_but_macos_it_says_applescript_needs_macos(system: str, tmp_path: Path) -> None:
    fake_osascript(tmp_path)
    availability = AppleScriptBackend(platform=system, path=str(tmp_path)).availability()
    assert not availability.available
    assert availability.reason is not None
    assert (
        availability.reason.startswith("AppleScript needs macOS") and system in availability.reason
    )


def test_on_macos_without_osascript_it_says_so(tmp_path: Path) -> None:
    availability = AppleScriptBackend(platform="darwin", path=str(tmp_path)).availability()
    assert availability.reason == "osascript was not found on PATH"


def test_on_macos_with_osascript_it_is_available(tmp_path: Path) -> None:
    script = fake_osascript(tmp_path)
    backend = AppleScriptBackend(platform="darwin", path=str(tmp_path))
    assert backend.availability().available
    assert backend.find_osascript() == str(script)


def test_starting_where_it_cannot_run_raises_backend_unavailable(tmp_path: Path) -> None:
    async def main() -> None:
        settings = SessionSettings(cwd=tmp_path, work_dir=tmp_path / "work")
        async with anyio.create_task_group() as tg:
            with pytest.raises(BackendUnavailable, match="AppleScript needs macOS"):
                await AppleScriptBackend(platform="linux").start(tg, settings)

    anyio.run(main)


def test_the_default_platform_is_this_one() -> None:
    assert AppleScriptBackend().platform == sys.platform


@pytest.mark.parametrize(
    ("code", "sentence"),
    [
        (0, "osascript exited with code 0"),
        (1, "osascript exited with code 1"),
        (-9, "osascript was killed by SIGKILL (often the out-of-memory killer)"),
        (-15, "osascript was killed by SIGTERM"),
        (-200, "osascript was killed by signal 200"),
    ],
)
def test_return_codes_become_sentences(code: int, sentence: str) -> None:
    assert describe_exit(code, "osascript") == sentence
