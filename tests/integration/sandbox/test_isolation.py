"""Escape attempts against each isolation rule of the bubblewrap sandbox."""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime.errors import UnsafePath
from lmc_runtime.sandbox import SandboxPolicy, open_in_session

from .conftest import Opener, needs_bwrap, run, text

pytestmark = [pytest.mark.anyio, pytest.mark.integration, needs_bwrap]


@pytest.fixture
def tcp_server() -> Iterator[int]:
    """A loopback TCP server on the host that answers b"hello" to each client."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(30)
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            with client:
                client.sendall(b"hello")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    server.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
    server.close()
    thread.join(timeout=30)


CONNECT = """
import socket
try:
    s = socket.create_connection(("127.0.0.1", {port}), timeout=5)
    print("REACHED", s.recv(5))
except OSError as exc:
    print("BLOCKED", type(exc).__name__)
"""


async def test_network_is_off_by_default(sandboxed: Opener, tcp_server: int) -> None:
    async with sandboxed() as (_, computer):
        out = text(await run(computer, CONNECT.format(port=tcp_server)))
    assert "BLOCKED" in out and "REACHED" not in out


@pytest.fixture
def tun_open() -> Iterator[None]:
    """/dev/net/tun open to the sandbox's uid (mode 0666, as Debian's udev makes it)."""
    tun = Path("/dev/net/tun")
    mode = tun.stat().st_mode & 0o7777
    if os.geteuid() == 0:
        os.chmod(tun, 0o666)
    elif not os.access(tun, os.R_OK | os.W_OK):
        pytest.skip("/dev/net/tun is closed to this user")
    try:
        yield
    finally:
        if os.geteuid() == 0:
            os.chmod(tun, mode)


async def test_network_opt_in_does_not_reach_the_host(
    sandboxed: Opener, tcp_server: int, tun_open: None
) -> None:
    async with sandboxed(SandboxPolicy(network=True)) as (_, computer):
        out = text(await run(computer, CONNECT.format(port=tcp_server)))
    assert "BLOCKED" in out and "REACHED" not in out


async def test_writes_outside_the_working_directory_fail(sandboxed: Opener, tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    code = f"""
import os
results = []
for path in [{str(target)!r}, "/etc/lmc-escape", "/usr/lmc-escape", {str(Path.cwd())!r} + "/x"]:
    try:
        open(path, "w").write("escaped")
        results.append("WROTE " + path)
    except OSError as exc:
        results.append("DENIED " + type(exc).__name__)
open("inside.txt", "w").write("fine")
open("/tmp/scratch", "w").write("fine")
print(results, os.getcwd())
"""
    async with sandboxed() as (sandbox, computer):
        out = text(await run(computer, code))
        assert (sandbox.work_dir / "inside.txt").read_text() == "fine"
        assert out.rstrip().endswith(" /home/user"), out  # the working directory, as seen inside
    # The system is read-only. Paths under /tmp (pytest's, or a checkout kept
    # there) land in the sandbox's private /tmp; the host's files are untouched.
    assert "WROTE /etc/lmc-escape" not in out and "WROTE /usr/lmc-escape" not in out, out
    assert out.count("DENIED") >= 2, out
    for path in (target, Path("/etc/lmc-escape"), Path("/usr/lmc-escape"), Path.cwd() / "x"):
        assert not path.exists(), path


async def test_the_host_environment_stays_out(
    sandboxed: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMC_TEST_HOST_SECRET", "s3cret-value")
    code = """
import os, glob
found = [k for k, v in os.environ.items() if "s3cret" in v or "SECRET" in k]
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        if b"s3cret" in open(path, "rb").read():
            found.append(path)
    except OSError:
        pass
print("FOUND", found, os.environ.get("SESSION_VAR"))
"""
    policy = SandboxPolicy(env={"SESSION_VAR": "given"})
    async with sandboxed(policy) as (_, computer):
        out = text(await run(computer, code))
    assert "FOUND [] given" in out


async def test_host_private_files_are_hidden(sandboxed: Opener) -> None:
    code = """
import os
try:
    print("SHADOW", open("/etc/shadow").read(40))
except OSError as exc:
    print("SHADOW HIDDEN", type(exc).__name__)
print("ROOT", sorted(os.listdir("/root")) if os.path.isdir("/root") else [])
"""
    async with sandboxed() as (_, computer):
        out = text(await run(computer, code))
    assert "SHADOW HIDDEN" in out, out
    visible = eval(out.split("ROOT", 1)[1].strip())  # only bound interpreter prefixes show
    host = set(os.listdir("/root"))
    assert set(visible) <= {".pyenv", ".local"} and set(visible) < host | {".pyenv"}, out


async def test_a_planted_symlink_is_never_followed(sandboxed: Opener, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret")
    code = f"""
import os
os.symlink({str(secret)!r}, "link.txt")
os.makedirs("real", exist_ok=True)
os.symlink("/etc", "dir_link")
os.symlink({str(tmp_path)!r}, "escape")
print("planted")
"""
    async with sandboxed() as (sandbox, computer):
        assert "planted" in text(await run(computer, code))
        root = sandbox.work_dir
        for relpath in ["link.txt", "dir_link/passwd", "escape/host-secret.txt"]:
            with pytest.raises(UnsafePath):
                open_in_session(root, relpath, "rb")
        with pytest.raises(UnsafePath):
            open_in_session(root, "link.txt", "wb")
        with pytest.raises(UnsafePath):
            open_in_session(root, "escape/new.txt", "wb")
        with open_in_session(root, "real/data.txt", "wb") as handle:
            handle.write(b"uploaded")
        out = text(await run(computer, "print(open('real/data.txt').read())"))
    assert "uploaded" in out
    assert secret.read_text() == "host secret"


async def test_no_process_is_left_after_aclose(sandboxed: Opener) -> None:
    # a duration no other test's sleep has: tests run beside this one (pytest -n)
    duration = f"1000.{secrets.randbelow(10**6)}"
    code = f"""
import subprocess, os
p = subprocess.Popen(["sleep", "{duration}"], start_new_session=True)
print("CHILD", p.pid)
"""
    async with sandboxed() as (sandbox, computer):
        await run(computer, code)
        usage = sandbox.usage()
        before = usage.processes
    assert before is None or before >= 2
    # the sleep the sandbox started is gone
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path("/proc", entry, "cmdline").read_bytes()
            except OSError:
                continue
            assert cmdline != f"sleep\0{duration}\0".encode()
