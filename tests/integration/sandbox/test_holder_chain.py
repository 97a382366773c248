"""What stays resident above a forked kernel's sandbox.

The fork server's starter starts the holder's sandbox: the exec wrapper's code,
in a fork of the starter, applies the session's options and becomes bwrap, which
dies with the starter's only thread (and the starter with the fork server). So no Python process stays per session
outside the kernel, from whichever thread the session was started (a
supervisor would follow the thread that started bwrap: ``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import pytest

from lmc_runtime.sandbox import Sandbox, SandboxPolicy
from lmc_runtime.sandbox.forks import ForkServer

from .conftest import Opener, needs_bwrap, run, text

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.integration,
    needs_bwrap,
    pytest.mark.skipif(not ForkServer.supported(), reason="kernels are forked by root only"),
]

#: How long the sandbox in a thread of its own may take, start to end.
_GUARD = 120.0


def _parents() -> dict[int, int]:
    """``pid: ppid`` of every process (one read of ``/proc``)."""
    table: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            table[int(entry)] = int(stat[stat.rfind(b")") + 2 :].split()[1])
    return table


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def holder_chains(root: int) -> list[list[list[str]]]:
    """For each holder (``sleep infinity``) that descends from ``root``: the
    command lines of the processes from ``root``'s child down to it."""
    parents = _parents()
    chains = []
    for pid in parents:
        if _argv(pid)[:2] != ["sleep", "infinity"]:
            continue
        chain, seen = [pid], {pid}
        while (parent := parents.get(chain[-1], 0)) not in (root, 0, *seen):
            chain.append(parent)
            seen.add(parent)
        if parent == root:
            chains.append([_argv(step) for step in reversed(chain)])
    return chains


def _python(argv: list[str]) -> bool:
    return bool(argv) and (
        os.path.basename(argv[0]).startswith("python") or any("_exec.py" in a for a in argv)
    )


def _fork_server_chain(chains: list[list[list[str]]]) -> list[str]:
    """The one chain below the fork server, by the names of its processes."""
    assert len(chains) == 1, chains
    (chain,) = chains
    assert not [argv for argv in chain if _python(argv)], chain
    return [os.path.basename(argv[0]) for argv in chain]


def _starter_pid(forks: ForkServer) -> int:
    """The fork server's starter: the parent of the holders' bwrap."""
    assert forks._process is not None and forks._starter is not None, "no fork server runs"
    assert _parents()[forks._starter] == forks._process.pid
    return forks._starter


async def test_no_python_process_stays_between_the_runtime_and_a_forked_kernels_bwrap(
    sandboxed: Opener,
) -> None:
    """Fails on a holder started under ``_exec.py --supervise``: 4 MiB of PSS per
    session, a whole interpreter resident for each; and on one started by the
    runtime (an interpreter started for the wrapper, some 10 ms of each start)."""
    forks = ForkServer()
    try:
        async with sandboxed(forks=forks) as (_, computer):
            assert text(await run(computer, "import os\nprint(os.getppid())")).strip() == "0"
            chains = holder_chains(_starter_pid(forks))  # this test's, not another's
    finally:
        await forks.aclose()
    assert _fork_server_chain(chains) == ["bwrap", "bwrap", "sleep"]


def test_a_holder_started_from_another_thread_has_no_supervisor_either(tmp_path: Path) -> None:
    """An event loop in a thread of its own (as a sync Computer's portal runs) may
    end before the process: the fork server's starter, not that thread, is
    bwrap's parent."""
    found: list[list[list[str]]] = []
    failed: list[BaseException] = []

    async def main() -> None:
        forks = ForkServer()
        sandbox = Sandbox(tmp_path / "s", SandboxPolicy(), forks=forks)
        try:
            await sandbox.start()
            async with sandbox.computer() as computer:
                out = text(await run(computer, "import os\nprint(os.getppid())"))
                assert out.strip() == "0", out  # the kernel was forked
                found.extend(holder_chains(_starter_pid(forks)))
        finally:
            await sandbox.aclose()
            await forks.aclose()

    async def bounded() -> None:
        with anyio.fail_after(_GUARD):
            await main()

    def loop() -> None:
        try:
            anyio.run(bounded, backend="asyncio")
        except BaseException as exc:  # reported by the test's own thread
            failed.append(exc)

    thread = threading.Thread(target=loop, name="a loop of its own", daemon=True)
    thread.start()
    thread.join(_GUARD + 30)
    assert not thread.is_alive(), "the sandbox in a thread of its own did not end"
    assert not failed, failed
    assert _fork_server_chain(found) == ["bwrap", "bwrap", "sleep"]
