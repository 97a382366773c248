"""Attacks through E2B's commands (``process.Process``): a second door into the
same sandbox, held as the lmc API holds its own.

A command runs inside its sandbox's session sandbox, as its user, in its
cgroup; it sees neither the host nor another sandbox; a pid names a command
of the sandbox the request is for and no other; nobody runs as root; the
variables that configure the loader are refused; a fork bomb and an output
flood are held; and no command outlives its sandbox, killed, timed out, or
its server killed.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from e2b import CommandExitException, Sandbox, SandboxException

from tests.integration.e2b.sdk_env import E2B_TOKEN, point_sdks_at, sdk_sandbox
from tests.integration.service.server import Server, _running, running_server
from tests.security.harness import Account, as_user
from tests.waiters import process_ended

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    """The server, as root and as an unprivileged user (whose sessions share one
    process limit: see ``--allow-shared-limits``)."""
    if account.root:
        with running_server("--pool-size", "1", "--processes", "64", token=E2B_TOKEN) as server:
            yield server
        return
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o755)
        data = Path(tmp) / "data"
        data.mkdir()
        os.chown(data, account.uid, account.gid)
        args = ("--pool-size", "1", "--allow-shared-limits")
        with _running(data, args, E2B_TOKEN, prefix=as_user(account)) as server:
            yield server
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def env(server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    return point_sdks_at(server, monkeypatch)


@pytest.fixture
def sbx(env: Server) -> Iterator[Sandbox]:
    with sdk_sandbox(Sandbox) as sandbox:
        yield sandbox


def _marker() -> str:
    """A number no other process of the host sleeps for."""
    return f"{secrets.randbelow(10**6) + 10**6}.{secrets.randbelow(1000):03d}"


def sleepers(marker: str) -> list[int]:
    """The host's pids of every process whose command line names ``marker`` (the
    sleeper itself, and the wrappers and bwrap that run it)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def the_sleeper(marker: str, timeout: float = 20.0) -> int:
    """The host pid of ``sleep MARKER`` itself, once it runs (bounded)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in sleepers(marker):
            try:
                if (
                    Path(f"/proc/{pid}/cmdline").read_bytes()
                    == b"sleep\0" + marker.encode() + b"\0"
                ):
                    return pid
            except OSError:
                continue
        process_ended(os.getpid(), 0.05)  # a bounded pause (this process never ends here)
    raise AssertionError(f"sleep {marker} never ran")


def all_gone(pids: list[int], timeout: float) -> bool:
    return all(process_ended(pid, timeout) for pid in pids)


# -- the host and other sandboxes ------------------------------------------------------


def test_a_command_does_not_see_the_hosts_processes_or_the_servers_files(
    sbx: Sandbox, env: Server, account: Account
) -> None:
    listed = sbx.commands.run("ls /proc | grep -c '^[0-9]'").stdout.strip()
    assert int(listed) < 10  # its own PID namespace: a handful of its own
    server_pid = env.process.pid
    seen = sbx.commands.run(f"cat /proc/{server_pid}/cmdline || true").stdout
    assert "lmc_runtime" not in seen
    data = env.data_dir
    result = sbx.commands.run(f"ls {data} 2>&1 || true; ls {data.parent} 2>&1 || true")
    assert "sessions" not in result.stdout
    # Its /tmp (the commands share one) is the session's, not the host's.
    assert data.parent.name not in sbx.commands.run("ls -a /tmp").stdout
    # Nothing it can read names where the server keeps the session.
    shown = sbx.commands.run(
        "cat /proc/*/cmdline /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; env; "
        "readlink /proc/*/cwd /proc/*/fd/*; true"
    ).stdout
    assert str(data) not in shown and "LMC_TOKEN" not in shown and E2B_TOKEN not in shown
    # A mount's root names a host folder unless it is on the session's disk image
    # (root's servers); a folder bound from the host's own filesystem shows its path.
    mounts = sbx.commands.run("cat /proc/self/mountinfo").stdout
    assert (str(data) in mounts) is not account.root


def test_a_command_runs_as_the_sandbox_user_in_the_sessions_cgroup(
    sbx: Sandbox, account: Account
) -> None:
    marker = _marker()
    handle = sbx.commands.run(f"sleep {marker}", background=True)
    try:
        pid = the_sleeper(marker)
        status = Path(f"/proc/{pid}/status").read_text()
        uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
        assert "0" not in uids  # never root on the host
        if account.root:  # an unprivileged server may have no cgroup to write
            assert "lmc-" in Path(f"/proc/{pid}/cgroup").read_text()  # the session's cgroup
        assert os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid")
        assert os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        assert sbx.commands.run("id -u").stdout.strip() == "1000"
        assert sbx.commands.run("whoami").stdout.strip() == "user"
    finally:
        handle.kill()


def test_nobody_runs_as_root(sbx: Sandbox) -> None:
    for user in ("root", "nobody"):
        with pytest.raises(SandboxException, match="one user"):
            sbx.commands.run("id -u", user=user)  # type: ignore[arg-type]
    result = sbx.commands.run("sudo -n id -u 2>&1; su -c 'id -u' root </dev/null 2>&1; true")
    assert "\n0\n" not in f"\n{result.stdout}\n"
    assert sbx.commands.run("id -u", user="user").stdout.strip() == "1000"


def test_another_sandboxs_files_and_commands_are_out_of_reach(env: Server) -> None:
    first, second = Sandbox.create(timeout=120), Sandbox.create(timeout=120)
    try:
        secret = secrets.token_hex(8)
        first.commands.run(f"echo {secret} > /home/user/secret-{secret}; echo {secret} > /tmp/s")
        marker = _marker()
        handle = first.commands.run(f"sleep {marker}", background=True)
        found = second.commands.run(
            f"grep -rs {secret} /home /tmp /run /var/tmp 2>/dev/null; "
            f"find / -name 'secret-{secret}' 2>/dev/null; true"
        )
        assert secret not in found.stdout
        # The first sandbox's pid names nothing in the second.
        assert second.commands.kill(handle.pid) is False
        with pytest.raises(SandboxException):
            second.commands.send_stdin(handle.pid, "x")
        with pytest.raises(SandboxException):
            second.commands.connect(handle.pid, timeout=5).wait()
        assert handle.pid not in [p.pid for p in second.commands.list()]
        assert handle.pid in [p.pid for p in first.commands.list()]
        assert the_sleeper(marker) > 0  # still running
        assert first.commands.kill(handle.pid) is True
    finally:
        first.kill()
        second.kill()


def test_the_loaders_variables_are_refused(sbx: Sandbox) -> None:
    for name in ("LD_PRELOAD", "LD_LIBRARY_PATH", "GLIBC_TUNABLES", "MALLOC_ARENA_MAX"):
        with pytest.raises(SandboxException, match="dynamic loader"):
            sbx.commands.run("true", envs={name: "/tmp/x.so"})
    with pytest.raises(SandboxException, match="invalid variable name"):
        sbx.commands.run("true", envs={"A=B": "1"})
    assert sbx.commands.run("echo $GOOD", envs={"GOOD": "yes"}).stdout == "yes\n"


def test_a_working_directory_is_entered_inside_the_sandbox(sbx: Sandbox, env: Server) -> None:
    assert sbx.commands.run("pwd", cwd="../../..").stdout.strip() == "/"
    # The server's own folders are not there: a cwd names a folder inside.
    with pytest.raises(CommandExitException, match="No such file"):
        sbx.commands.run("ls", cwd=str(env.data_dir))
    with pytest.raises(CommandExitException, match="No such file"):
        sbx.commands.run("pwd", cwd="/no/such/folder")
    sbx.commands.run("mkdir -p /home/user/sub && ln -s / /home/user/sub/root")
    assert sbx.commands.run("pwd -P", cwd="sub/root").stdout == "/\n"


def test_malformed_requests_get_connect_errors_not_500(sbx: Sandbox, env: Server) -> None:
    headers = {"E2b-Sandbox-Id": sbx.sandbox_id, "E2b-Sandbox-Port": "49983"}
    url = env.url + "/process.Process/"
    with httpx.Client(timeout=10) as client:
        for method, body, kind in (
            ("Start", b"\x00\x00\x00\x00\x05garbage", "application/connect+proto"),
            ("Start", b"\x00\xff\xff\xff\xff", "application/connect+proto"),
            ("SendInput", b"\xff\xfe", "application/proto"),
            ("SendSignal", b"{", "application/json"),
            ("Nope", b"", "application/proto"),
        ):
            answer = client.post(
                url + method, content=body, headers={**headers, "Content-Type": kind}
            )
            assert answer.status_code < 500, (method, answer.status_code, answer.text)


# -- limits ----------------------------------------------------------------------


def test_a_fork_bomb_is_held_and_the_sandbox_lives_on(sbx: Sandbox, account: Account) -> None:
    if not account.root:
        pytest.skip("an unprivileged server's sessions share its own process limit")
    with pytest.raises(CommandExitException) as held:
        sbx.commands.run("bomb() { bomb | bomb & }; bomb; sleep 3; exit 1", timeout=90)
    assert "Resource temporarily unavailable" in (held.value.stderr or "")  # the session's limit
    assert sbx.commands.list() == []  # what it left ended with it
    assert sbx.commands.run("echo alive; ps -e | wc -l").stdout.split()[0] == "alive"


def test_an_output_flood_keeps_the_servers_memory_bounded(sbx: Sandbox, env: Server) -> None:
    def rss() -> int:
        status = Path(f"/proc/{env.process.pid}/status").read_text()
        line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
        return int(line.split()[1]) * 1024

    before = rss()
    flood = sbx.commands.run("yes flood-flood-flood-flood", background=True)  # nobody reads it
    # A client that never reads its stream (a handle never waited on) holds its
    # command back, and none of it piles up in the server.
    stalled = sbx.commands.run("yes stalled-stalled-stalled", background=True)
    # A client that reads a flood in the foreground is stopped by its timeout.
    with pytest.raises(Exception, match=r"(?i)timeout|timed out|deadline"):
        sbx.commands.run("yes 0123456789abcdef", timeout=3, on_stdout=lambda _: None)
    assert rss() - before < 200 << 20
    assert sbx.commands.kill(flood.pid) and sbx.commands.kill(stalled.pid)


# -- nothing outlives its sandbox ---------------------------------------------------------


def _two_sleepers(sandbox: Sandbox) -> tuple[str, list[int]]:
    """Two sleeps the sandbox's commands start, a background command and one escaped
    into a session of its own: their marker and host pids once they run."""
    marker = _marker()
    sandbox.commands.run(f"sleep {marker}", background=True)
    sandbox.commands.run(f"nohup setsid sleep {marker} >/dev/null 2>&1 &", timeout=10)
    the_sleeper(marker)
    return marker, sleepers(marker)


def test_a_command_ends_with_its_sandbox_killed(env: Server) -> None:
    sandbox = Sandbox.create(timeout=120)
    marker, pids = _two_sleepers(sandbox)
    sandbox.kill()
    assert all_gone(pids, 20), sleepers(marker)


def test_a_command_ends_with_its_sandbox_timed_out(env: Server) -> None:
    sandbox = Sandbox.create(timeout=4)
    marker = _marker()
    sandbox.commands.run(f"sleep {marker}", background=True)
    pids = sleepers(marker)
    the_sleeper(marker)
    pids = sleepers(marker)
    assert all_gone(pids, 30), sleepers(marker)


def test_a_command_ends_with_its_server_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)  # sandbox users pass through to their session folders
        data_dir = Path(tmp) / "data"
        with _running(data_dir, ("--pool-size", "0"), E2B_TOKEN) as doomed:
            point_sdks_at(doomed, monkeypatch)
            marker, pids = _two_sleepers(Sandbox.create(timeout=120))
            doomed.process.send_signal(signal.SIGKILL)
            doomed.process.wait(timeout=10)
            assert all_gone(pids, 20), sleepers(marker)
        # The next start cleans what the killed server left (its mounts, its cgroups).
        with _running(data_dir, ("--pool-size", "0"), E2B_TOKEN):
            pass
