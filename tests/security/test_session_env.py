"""Class 11, a session's environment: its values are the client's, and only the
processes inside its sandbox may have them.

The API lists a session's variable names only, but each value was on the
command line of the session's bwrap processes (``--setenv NAME VALUE``), which
any host user reads in /proc; and every variable was in the environment of the
wrappers the root server starts before they drop privileges, where the dynamic
loader honours the ones it reads (``GLIBC_TUNABLES``: CVE-2023-4911's input)."""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.service.server import Server, output

from .attacks import execute
from .harness import Account, serve_as

pytestmark = pytest.mark.timeout(300)

#: Run as ``nobody``: every readable /proc/*/cmdline and environ holding its input.
_SCAN_AS_NOBODY = """
import os, sys
marker = sys.stdin.buffer.read()  # not an argument: this process's own cmdline
for pid in filter(str.isdigit, os.listdir("/proc")):
    for name in ("cmdline", "environ"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as file:
                if marker in file.read():
                    print(pid, name)
        except OSError:
            pass
"""

_AS_NOBODY = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--")

#: Variables the loader or an interpreter reads at start-up, which a session may
#: set for its own processes.
_START_UP = ("PYTHONPATH", "PYTHONWARNINGS", "BASH_ENV", "NODE_OPTIONS", "JAVA_TOOL_OPTIONS")


#: Languages and whether the session has the network (its own helper starts bwrap).
_KINDS = [("python", False), ("shell", False), ("shell", True)]


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    tun = Path("/dev/net/tun")
    mode = stat.S_IMODE(tun.stat().st_mode)
    os.chmod(tun, 0o666)  # as Debian's udev rule makes it, for the unprivileged server
    try:
        args = ("--allow-network", "--pool-size", "0", "--max-sessions", "2")
        with serve_as(account, *args) as running:
            yield running
    finally:
        os.chmod(tun, mode)


def _outside_the_sandbox() -> list[int]:
    """The host's processes in this test's own user namespace: bwrap, the wrappers,
    the server (a sandbox's processes are in user namespaces of their own)."""
    ours = os.stat("/proc/self/ns/user").st_ino
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}/ns/user").st_ino == ours:
                found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.mark.parametrize(("language", "network"), _KINDS)
def test_session_env_values_are_not_readable_by_other_host_users(
    server: Server, language: str, network: bool
) -> None:
    """Regression: user nobody read a session's env values from the command line
    of its bwrap processes (``--setenv NAME VALUE``)."""
    value = "env-secret-" + secrets.token_hex(8)
    sid = server.create(languages=[language], network=network, env={"LMC_TEST_SECRET": value})
    try:
        shown = output(
            execute(server, sid, language, "import os; print(os.environ['LMC_TEST_SECRET'])")
            if language == "python"
            else execute(server, sid, language, 'echo "$LMC_TEST_SECRET"')
        )
        assert shown.strip() == value, shown  # the session still has it
        scan = subprocess.run(
            [*_AS_NOBODY, sys.executable, "-I", "-c", _SCAN_AS_NOBODY],
            input=value,
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
        assert scan.returncode == 0, scan.stderr
        assert scan.stdout == "", f"nobody read the value in /proc: {scan.stdout}"
    finally:
        server.delete(sid)


def test_glibc_tunables_are_refused(server: Server) -> None:
    """Regression: ``GLIBC_TUNABLES`` got past the refused names and was applied
    by the dynamic loader of the wrappers the root server starts (their VmData
    grew by 520 MB)."""
    with server.client() as client:
        for name in ("GLIBC_TUNABLES", "LD_AUDIT", "MALLOC_TOP_PAD_"):
            refused = client.post("/v1/sessions", json={"env": {name: "glibc.malloc.top_pad=512M"}})
            assert refused.status_code == 400, (name, refused.text)
            assert name in refused.text, refused.text


@pytest.mark.parametrize(("language", "network"), _KINDS)
def test_start_up_variables_reach_only_the_sandbox(
    server: Server, language: str, network: bool
) -> None:
    """Regression: every session variable was in the environment of the host's
    wrappers and on bwrap's command line, started by the root server before they
    drop privileges; now no process outside the sandbox has one as a variable
    (the loader and interpreters there never read it): the innermost step, inside
    the sandbox and after the drop, applies them."""
    marker = "startup-" + secrets.token_hex(8)
    env = {name: f"/nonexistent/{marker}" for name in _START_UP}
    sid = server.create(languages=[language], network=network, env=env)
    try:
        code = (
            "import os; print(os.environ['BASH_ENV'], os.environ['PYTHONPATH'])"
            if language == "python"
            else 'echo "$BASH_ENV $PYTHONPATH"'
        )
        shown = output(execute(server, sid, language, code))
        assert shown.split() == [env["BASH_ENV"], env["PYTHONPATH"]], shown
        leaks = []
        for pid in _outside_the_sandbox():
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            for name, variable_value in env.items():
                if f"{name}={variable_value}".encode() in environ:
                    leaks.append((pid, name, cmdline[:200]))
            if marker.encode() in cmdline:
                leaks.append((pid, "cmdline", cmdline[:200]))
        assert not leaks, f"outside the sandbox: {leaks}"
    finally:
        server.delete(sid)


def test_without_bubblewrap_the_one_wrapper_names_the_variables(account: Account) -> None:
    """With the operator's ``--no-sandbox`` the host wrapper is the innermost step:
    it gives the session's variables their names (and replaces the host's)."""
    with serve_as(account, "--no-sandbox", "--pool-size", "0", "--max-sessions", "2") as plain:
        for language, code in (
            ("python", "import os; print(os.environ['GREETING'], os.environ['LANG'])"),
            ("shell", 'echo "$GREETING $LANG"; env | grep -c LMC_SANDBOX_SET_'),
        ):
            sid = plain.create(languages=[language], env={"GREETING": "hi", "LANG": "C"})
            try:
                shown = output(execute(plain, sid, language, code)).split()
            finally:
                plain.delete(sid)
            assert shown[:2] == ["hi", "C"], shown
            assert shown[2:] in ([], ["0"]), shown


@pytest.mark.parametrize("network", [False, True])
def test_a_small_file_size_limit_still_hands_the_environment_over(
    server: Server, network: bool
) -> None:
    """Regression: the environment and the seccomp program travel in memory files,
    which the session's file size limit capped where the host writes them (the
    network helper writes its own after the limit is set): a session with
    ``file_size_bytes`` under their size could not start."""
    value = "y" * 4000
    sid = server.create(
        languages=["shell"], network=network, limits={"file_size_bytes": 1024}, env={"BIG": value}
    )
    try:
        shown = output(execute(server, sid, "shell", 'echo "${#BIG} $(ulimit -f)"'))
    finally:
        server.delete(sid)
    assert shown.split() == ["4000", "1"], shown  # bash counts 1024-byte blocks: it holds
