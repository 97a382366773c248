"""Attacks on the fork server, each run from a kernel it forked.

A forked kernel must be confined exactly as a kernel started the usual way
(same user, groups, capabilities, namespaces, limits, descriptors and
environment), must see nothing outside its own sandbox (not the fork server,
not another session), and must hold nothing of another session in its memory:
the fork server never reads a request itself, so a kernel forked after
another session's inherits none of that session's secrets.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import secrets
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from lmc_runtime import Computer
from lmc_runtime.errors import ForkFailed
from lmc_runtime.sandbox import SandboxPolicy, SessionLimits
from lmc_runtime.sandbox import forks as forks_module
from lmc_runtime.sandbox.forks import ForkServer
from lmc_runtime.sandbox.holder import end_holder, start_holder

from .conftest import Opener, needs_bwrap, run, statuses, text

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.integration,
    needs_bwrap,
    pytest.mark.skipif(not ForkServer.supported(), reason="kernels are forked by root only"),
]

#: Everything about the kernel's confinement that it can see from inside.
PROBE = r"""
import json, os, resource
status = dict(l.rstrip("\n").split(":\t", 1) for l in open("/proc/self/status") if ":\t" in l)
fds = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        kind = os.readlink("/proc/self/fd/" + fd).split("[")[0]
    except OSError:
        continue
    fds[kind] = fds.get(kind, 0) + 1
fds = sorted(fds)  # what kinds (how many sockets depends on the client's connections)
names = ("FSIZE", "NPROC", "AS", "DATA", "CORE", "NOFILE", "CPU", "STACK")
print(json.dumps({
    "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups()],
    "status": {k: status[k].strip() for k in (
        "Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
        "NoNewPrivs", "Seccomp")},
    "root": sorted(os.listdir("/")),
    "fds": fds,
    "env": sorted(os.environ),
    "cwd": os.getcwd(),
    "host": os.uname().nodename,
    "limits": {n: resource.getrlimit(getattr(resource, "RLIMIT_" + n)) for n in names},
    "session_leader": os.getsid(0) == os.getpid(),
    "cgroup": open("/proc/self/cgroup").read(),
    "forked": os.getppid() == 0,
}))
"""

#: Prints the SHA-256 of every match of the regular expressions in PATTERNS found
#: in the kernel's own memory (the code holds the patterns, never what it looks for).
SCAN = r"""
import hashlib, re
found = set()
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        fields = line.split()
        if "r" not in fields[1] or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]")):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        try:
            mem.seek(start)
            chunk = mem.read(end - start)
        except (OSError, ValueError, OverflowError):
            continue
        for pattern in PATTERNS:
            for match in re.finditer(pattern, chunk):
                found.add(hashlib.sha256(match.group()).hexdigest())
print(sorted(found))
"""


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
async def forks() -> AsyncIterator[ForkServer]:
    server = ForkServer()
    try:
        yield server
    finally:
        await server.aclose()


async def probe(computer: Computer) -> dict[str, Any]:
    out = await run(computer, PROBE)
    result: dict[str, Any] = json.loads(text(out).strip().splitlines()[-1])
    return result


async def test_a_forked_kernel_is_confined_exactly_as_a_started_one(
    sandboxed: Opener, forks: ForkServer
) -> None:
    limits = SessionLimits(file_size_bytes=5 << 20, processes=64)
    policy = SandboxPolicy(limits=limits)
    async with sandboxed(policy) as (_, started), sandboxed(policy, forks=forks) as (_, forked):
        usual, fork = await probe(started), await probe(forked)
    assert fork.pop("forked") and not usual.pop("forked")
    # Its own session and process group (so that signals to the group reach it),
    # where a started kernel shares its wrappers'; neither has a terminal.
    assert fork.pop("session_leader") and not usual.pop("session_leader")
    assert fork["status"]["CapEff"] == fork["status"]["CapBnd"] == "0" * 16
    assert fork["status"]["NoNewPrivs"] == "1" and fork["ids"] == [1000, 1000, 1000, 1000, []]
    assert fork["limits"]["FSIZE"] == [5 << 20, 5 << 20]
    # The session's own paths differ; everything else must be the same.
    for result in (usual, fork):
        result["cwd"] = result["cwd"].rsplit("/", 3)[-2:]
    assert fork == usual


async def test_a_forked_kernel_sees_no_other_process_and_no_other_session(
    sandboxed: Opener, forks: ForkServer
) -> None:
    async with (
        sandboxed(forks=forks) as (other_box, other),
        sandboxed(forks=forks) as (_, forked),
    ):
        await run(other, "x = 1")
        code = (
            f"print(os.path.exists({str(other_box.work_dir)!r}))\n"
            "mine = {int(t) for t in os.listdir('/proc/self/task')}\n"
            "others = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in mine]\n"
            "print([open(f'/proc/{p}/cmdline', 'rb').read().decode() for p in others])\n"
            "print([p for p in range(1, 1 << 15) if p not in mine and _can_kill(p)])"
        )
        helper = (
            "def _can_kill(pid):\n"
            "    try:\n        os.kill(pid, 0)\n    except OSError:\n        return False\n"
            "    return True\n"
        )
        out = text(await run(forked, "import os\n" + helper + code)).splitlines()
    assert out[0] == "False", out
    # Its sandbox's init (bwrap) and the holder (sleep): no fork server, nothing forked for it.
    commands = sorted(c.split("\0")[0] for c in ast.literal_eval(out[1]))
    assert commands == ["/usr/bin/bwrap", "sleep"], commands
    assert len(ast.literal_eval(out[2])) == 2, out  # the same two, and nothing else


async def test_a_forked_kernel_holds_no_secret_of_another_session(
    sandboxed: Opener, forks: ForkServer
) -> None:
    """Regression guard: a fork server that read requests itself would keep one
    session's environment in the memory every later kernel is forked from."""
    theirs, mine = f"lmc-secret-{secrets.token_hex(12)}", f"lmc-secret-{secrets.token_hex(12)}"
    their_policy = SandboxPolicy(env={"THEIR_SECRET": theirs})
    async with sandboxed(their_policy, forks=forks) as (their_box, first):
        await run(first, "print(1)")
        key = json.loads((their_box.control_dir / "python" / "connection.json").read_text())["key"]
        async with sandboxed(SandboxPolicy(env={"MY_SECRET": mine}), forks=forks) as (box, second):
            folders = re.escape(str(box.root.parent).encode()) + rb"/s[0-9]+"
            patterns = [rb"lmc-secret-[0-9a-f]{24}", rb"[0-9a-f]{8}-[0-9a-f]{24}", folders]
            out = await run(second, f"PATTERNS = {patterns!r}\n" + SCAN)
            own_key = json.loads((box.control_dir / "python" / "connection.json").read_text())[
                "key"
            ]
    found = set(ast.literal_eval(text(out).strip()))
    # The scan works: it finds this session's own secret and key.
    assert {sha256(mine), sha256(own_key)} <= found, out
    assert not {sha256(theirs), sha256(key), sha256(str(their_box.root))} & found
    # Nor its own folder: the kernel sees its files at the sandbox's own places.
    assert sha256(str(box.root)) not in found


async def test_forked_kernels_do_not_share_random_state(
    sandboxed: Opener, forks: ForkServer
) -> None:
    code = "import random, tempfile\nprint(random.getrandbits(64), tempfile.mktemp())"
    async with sandboxed(forks=forks) as (_, one), sandboxed(forks=forks) as (_, two):
        first, second = text(await run(one, code)), text(await run(two, code))
    assert first.split()[0] != second.split()[0] and first.split()[1] != second.split()[1]


async def test_a_forked_kernel_does_not_see_the_fork_servers_own_module(
    sandboxed: Opener, forks: ForkServer
) -> None:
    """The fork server imports a kernel's start by file name: a kernel's ``_child``
    module must be the kernel's own, not that one."""
    code = "import sys\nprint('_child' in sys.modules)"
    async with sandboxed(forks=forks) as (_, forked):
        assert text(await run(forked, code)).strip() == "False"


async def test_a_forked_kernel_is_interrupted_killed_and_restarted(
    sandboxed: Opener, forks: ForkServer
) -> None:
    async with sandboxed(forks=forks) as (_, forked):
        out = [m async for m in forked.arun("python", "while True: pass", timeout=1)]
        assert "KeyboardInterrupt" in text(out) or "timeout" in statuses(out), out
        out = await run(forked, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        assert "kernel_died" in statuses(out), out
        out = await run(forked, "import os\nprint('again', os.getppid())")
        assert "again 0" in text(out), out  # forked again, not started the usual way


@pytest.mark.parametrize(
    ("limits", "code", "status"),
    [
        (SessionLimits(memory_bytes=256 << 20), "a = bytearray(700 << 20)", "memory_limit"),
        (SessionLimits(processes=48), "import os\nwhile True:\n    os.fork()\n", "process_limit"),
        (
            SessionLimits(file_size_bytes=1 << 20),
            'open("big.bin", "wb").write(b"x" * (3 << 20))',
            "file_size_limit",
        ),
    ],
    ids=["memory", "processes", "file_size"],
)
async def test_the_session_limits_hold_for_a_forked_kernel(
    sandboxed: Opener, forks: ForkServer, limits: SessionLimits, code: str, status: str
) -> None:
    async with sandboxed(SandboxPolicy(limits=limits), forks=forks) as (_, forked):
        out = await run(forked, code)
        assert status in statuses(out), out
        out = await run(forked, "import os\nprint('fine', os.getppid())")
        assert "fine 0" in text(out), out


async def test_a_fork_server_that_cannot_start_leaves_kernels_to_start_the_usual_way(
    sandboxed: Opener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken_zygote.py"
    broken.write_text("import sys\nsys.stderr.write('no ipykernel here\\n')\nsys.exit(3)\n")
    monkeypatch.setattr(forks_module, "ZYGOTE", broken)
    server = ForkServer()
    try:
        async with sandboxed(forks=server) as (_, computer):
            out = await run(computer, "import os\nprint('started', os.getppid() != 0)")
        assert "started True" in text(out), out
        with pytest.raises(ForkFailed, match="no ipykernel here"):
            await server.spawn({}, -1, -1, -1)
    finally:
        await server.aclose()


#: A stand-in for bwrap and its holder: the report on the info descriptor at once,
#: ``ready`` only once the test says so (through a FIFO).
_SLOW_SANDBOX = """
import json, os, sys
os.write(int(sys.argv[1]), json.dumps({"child-pid": os.getpid()}).encode())
open(sys.argv[2], "w").close()  # tells the test the report is out
open(sys.argv[3]).read()  # waits for the test's word
print("ready", flush=True)
open(sys.argv[3]).read()
"""


async def test_the_sandbox_is_entered_only_once_its_holder_runs(tmp_path: Path) -> None:
    """Regression: bwrap reports its namespaces (``--info-fd``) before it has mapped
    the sandbox's user, mounted its root or made its nested user namespace; a
    kernel that entered at once failed (EINVAL) or could have found a half-made
    sandbox. The pidfd is handed out only after the holder says it runs."""
    reported, go = tmp_path / "reported", tmp_path / "go"
    os.mkfifo(reported)
    os.mkfifo(go)
    script = tmp_path / "sandbox.py"
    script.write_text(_SLOW_SANDBOX)

    def command(info_fd: int) -> list[str]:
        return [sys.executable, str(script), str(info_fd), str(reported), str(go)]

    result: list[tuple[object, int]] = []

    async def start() -> None:
        result.append(await start_holder(command, os.environ, str(tmp_path), 2))

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(start)
            await anyio.to_thread.run_sync(reported.read_text)
            assert not result  # the report is out, the holder has not said it runs
            await anyio.to_thread.run_sync(go.write_text, "")
    process, pidfd = result[0]
    os.close(pidfd)
    end_holder(process)  # type: ignore[arg-type]


_SPLIT_READY = """
import json, os, sys, time
os.write(int(sys.argv[1]), json.dumps({"child-pid": os.getpid()}).encode())
os.write(1, b"ready")
time.sleep(0.3)  # the newline apart, as an unbuffered print() sends it
os.write(1, b"\\n")
time.sleep(60)
"""


async def test_a_holder_that_says_ready_in_two_writes_is_heard(tmp_path: Path) -> None:
    """Regression: the holder's word was read with one read(); a holder whose
    output is unbuffered (PYTHONUNBUFFERED in the environment) writes the newline
    apart, and the read got b'ready': 'the sandbox's holder did not start'."""
    script = tmp_path / "sandbox.py"
    script.write_text(_SPLIT_READY)

    def command(info_fd: int) -> list[str]:
        return [sys.executable, str(script), str(info_fd)]

    with anyio.fail_after(60):
        process, pidfd = await start_holder(command, os.environ, str(tmp_path), 2)
    os.close(pidfd)
    end_holder(process)


async def test_a_process_that_left_the_kernels_session_ends_with_a_forked_kernel(
    sandboxed: Opener, forks: ForkServer
) -> None:
    """A forked kernel's kill does not search the host's processes for its
    session's (a walk of ``/proc``, milliseconds per close with many sessions):
    its sandbox's PID namespace ends with it, and takes them all."""
    escape = (
        "import subprocess\n"
        "p = subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
        "print('ESCAPED', open(f'/proc/{p.pid}/stat').read().split()[5] != str(p.pid) or p.pid)"
    )
    async with sandboxed(forks=forks) as (_, forked):
        out = await run(forked, escape)
        assert "ESCAPED" in text(out), out
        sleepers = _sleepers()
        assert sleepers, "the escaped sleep is not running"
        await forked.arestart("python")
        with anyio.fail_after(30):
            while _sleepers() & sleepers:
                await anyio.sleep(0.05)
        out = await run(forked, "import os\nprint('after', os.getppid())")
        assert "after 0" in text(out), out


def _sleepers() -> set[int]:
    """Host pids running ``sleep 1000``."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path("/proc", entry, "cmdline").read_bytes() == b"sleep\x001000\x00":
                    found.add(int(entry))
            except OSError:
                continue
    return found
