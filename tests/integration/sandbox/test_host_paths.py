"""No path the code can read names where the host keeps the session.

Each interpreter's sandbox is searched from inside, by a shell its code starts:
the mount points in ``/proc/self/mountinfo``, and for every process it can see
(bwrap, the wrapper, the interpreter, the shell itself) its command line, its
environment, its working directory and the names of its open files, then the
unix sockets bound in its network namespace. None may hold the server's data
directory (here ``tmp_path``, where the session folders are).
"""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lmc_runtime import Computer
from lmc_runtime.sandbox.forks import ForkServer

from .conftest import Opener, needs_bwrap, run, statuses, text

pytestmark = [pytest.mark.anyio, pytest.mark.integration, needs_bwrap]

#: What a shell started by the code prints of its sandbox.
_SEARCH = r"""
for p in /proc/[0-9]*; do
  echo "== $p cmdline: $(tr '\0' ' ' < $p/cmdline 2>/dev/null)"
  echo "== $p environ: $(tr '\0' ' ' < $p/environ 2>/dev/null)"
  echo "== $p cwd: $(readlink $p/cwd 2>/dev/null)"
  for f in $p/fd/*; do echo "== $p fd: $(readlink $f 2>/dev/null)"; done
done
echo "== mountinfo"
cat /proc/self/mountinfo
echo "== unix"
cat /proc/net/unix
echo "== searched"
"""

_ENCODED = base64.b64encode(_SEARCH.encode()).decode()
_PIPE = f"echo {_ENCODED} | base64 -d | sh"

#: The code that runs the search, in each language.
SEARCH = {
    "python": f"import subprocess\nprint(subprocess.run({_PIPE!r}, shell=True, "
    "capture_output=True, text=True).stdout)",
    "shell": _PIPE,
    "javascript": "console.log(require('child_process').execSync("
    f"{_PIPE!r}, {{encoding: 'utf8', maxBuffer: 1 << 24}}))",
    "r": f"cat(system({_PIPE!r}, intern = TRUE), sep = '\\n')",
    "java": 'var searched = new ProcessBuilder("sh", "-c", "' + _PIPE + '")'
    ".redirectErrorStream(true).start();\n"
    "System.out.print(new String(searched.getInputStream().readAllBytes()));\n"
    "searched.waitFor();",
}
SEARCH["typescript"] = SEARCH["javascript"]


@pytest.fixture
async def forks() -> AsyncIterator[ForkServer | None]:
    if not ForkServer.supported():
        yield None
        return
    server = ForkServer()
    try:
        yield server
    finally:
        await server.aclose()


def _leaks(found: str, hidden: list[str]) -> list[str]:
    """The lines of ``found`` that name one of ``hidden``. A mount's root (the
    fourth field of mountinfo) is a path inside the filesystem it comes from: on
    the session's disk image it names no host folder, but a plain folder bound
    from the host's own filesystem shows its path there, which no mount can
    hide, so that field is left out unless the session has an image."""
    image = os.geteuid() == 0
    leaks = []
    in_mountinfo = False
    for line in found.splitlines():
        if line.startswith("== "):
            in_mountinfo = line == "== mountinfo"
        shown = line
        if in_mountinfo and not image and len(line.split()) > 4:
            fields = line.split()
            shown = " ".join(fields[:3] + fields[4:])
        if any(path in shown for path in hidden):
            leaks.append(line)
    return leaks


async def _search(computer: Computer, language: str) -> str:
    messages = await run(computer, SEARCH[language], language)
    found = text(messages)
    assert "== searched" in found, (language, statuses(messages), found[-2000:])
    return found


async def _check(computer: Computer, languages: list[str], tmp_path: Path) -> None:
    hidden = sorted({str(tmp_path), str(tmp_path.resolve())})
    for language in languages:
        status = computer.languages[language]
        if not status.available:
            assert language not in ("python", "shell"), status.reason
            continue
        found = await _search(computer, language)
        assert "/home/user" in found, (language, found[-2000:])
        assert _leaks(found, hidden) == [], language


@pytest.mark.parametrize("language", ["python", "shell", "javascript", "typescript", "r", "java"])
async def test_no_path_the_code_can_read_names_the_session_folder(
    sandboxed: Opener, tmp_path: Path, language: str
) -> None:
    """Guards the sandbox's view: the control and shared folders (connection
    files, FIFOs, sockets) were bound at their host paths, and bwrap's command
    line, the wrapper's environment (PWD) and the descriptors the host opened
    named the session folder inside the server's data directory."""
    async with sandboxed() as (_, computer):
        await _check(computer, [language], tmp_path)


async def test_a_forked_python_kernel_names_no_session_folder(
    sandboxed: Opener, tmp_path: Path, forks: ForkServer | None
) -> None:
    """The same for a Python kernel the fork server started in its sandbox."""
    if forks is None:
        pytest.skip("kernels are forked by root only")
    async with sandboxed(forks=forks) as (_, computer):
        await _check(computer, ["python"], tmp_path)
        # A restarted kernel is forked again, with the same view.
        await computer.arestart("python")
        await _check(computer, ["python"], tmp_path)
