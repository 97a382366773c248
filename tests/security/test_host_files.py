"""Attacks on the host's own files for a session (classes 1 to 4, 7 and 8).

Each runs against a real ``lmc serve`` with real bubblewrap, as root and as an
unprivileged user. The host must never write, read or bind through a path the
sandbox can change, never run a sandbox as host root, never stall on what a
session filled, and never share one process limit between sessions silently.
"""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.service.server import TOKEN, Server, final_status, output

from .attacks import FIND_WRITABLE, execute, planted_links_code, restart
from .harness import Account, _traversable, as_user, serve_as

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    """The server under attack, shared by the module's tests on purpose: each test
    makes sessions of its own, and one server facing them all is the setting."""
    with serve_as(account, "--pool-size", "0", "--max-sessions", "4") as running:
        yield running


@pytest.fixture
def host_dir(account: Account) -> Iterator[Path]:
    """A host folder the server's user could write into (if it followed a link)."""
    with tempfile.TemporaryDirectory(prefix="lmc-attack-") as tmp:
        os.chmod(tmp, 0o777)
        yield Path(tmp)


def test_links_planted_in_the_sandbox_never_receive_host_writes(
    server: Server, host_dir: Path
) -> None:
    """Class 1: shell cells, init scripts, node FIFOs, HTML pages, logs and
    connection files were written by path into a folder the sandbox could
    write, so links planted there sent the model's code to any host path."""
    sid = server.create(languages=["python", "shell", "javascript", "html"])
    planted = execute(server, sid, "python", planted_links_code(str(host_dir)))
    assert "planted" in output(planted), planted
    for _ in range(2):
        for language, code in (("shell", "echo hi"), ("javascript", "1 + 1"), ("html", "<p>x</p>")):
            execute(server, sid, language, code)
        for language in ("shell", "javascript", "python"):
            restart(server, sid, language)
    assert sorted(os.listdir(host_dir)) == [], "the host wrote through a planted link"
    server.delete(sid)


#: Keeps replacing every PNG the sandbox can see with a link to the reader's
#: own environment (the host's, if the host follows it).
_SWAP_SCREENSHOTS = (
    FIND_WRITABLE
    + r"""
import threading, time
def swap():
    end = time.monotonic() + 120
    while time.monotonic() < end:
        for top in writable():
            for folder, dirs, files in os.walk(top):
                if folder.count("/") - top.count("/") > 3:
                    dirs[:] = []
                for name in files:
                    path = os.path.join(folder, name)
                    if name.endswith(".png") and not os.path.islink(path):
                        try:
                            os.symlink("/proc/self/environ", path + ".l")
                            os.replace(path + ".l", path)
                        except OSError:
                            pass
threading.Thread(target=swap, daemon=True).start()
print("swapping")
"""
)


def test_a_screenshot_swapped_for_a_link_is_never_read_through_it(server: Server) -> None:
    """Class 2: the screenshot was read back by path, so a link swapped in for it
    returned the server's environment, its token included, as the image."""
    sid = server.create(languages=["python", "html"])
    assert "swapping" in output(execute(server, sid, "python", _SWAP_SCREENSHOTS))
    for _ in range(4):
        messages = execute(server, sid, "html", "<h1>hello</h1>")
        for message in messages:
            if message.get("type") == "image":
                data = base64.b64decode(message["content"])
                assert TOKEN.encode() not in data and b"LMC_TOKEN" not in data
                assert data.startswith(b"\x89PNG"), data[:40]
    server.delete(sid)


def test_files_swapped_for_links_during_restarts_never_bind_host_files(
    server: Server, account: Account
) -> None:
    """Class 3: the runtime files were listed first and bound later by path; a
    file swapped for a link in between bound a host file into the new sandbox."""
    with tempfile.TemporaryDirectory(prefix="lmc-secret-") as tmp:
        os.chmod(tmp, 0o755)
        secret = Path(tmp) / "secret"
        marker = "SECRET-" + secrets.token_hex(8)
        secret.write_text(marker)
        os.chmod(secret, 0o644)
        sid = server.create(languages=["python", "shell"])
        folders = output(execute(server, sid, "python", FIND_WRITABLE + "print(*writable())"))
        swapper = (
            f"T={secret}\n"
            "( end=$((SECONDS+90)); while [ $SECONDS -lt $end ]; do\n"
            f"  for d in {folders.strip()}; do\n"
            '    echo plain > "$d/evil.r" && mv -f "$d/evil.r" "$d/evil"\n'
            '    ln -sfn "$T" "$d/evil.l" && mv -fT "$d/evil.l" "$d/evil"\n'
            "  done; done ) >/dev/null 2>&1 &\n"
            "echo started\n"
        )
        assert "started" in output(execute(server, sid, "shell", swapper))
        reader = FIND_WRITABLE + (
            "seen = []\n"
            "for top in writable():\n"
            "    try:\n"
            "        seen.append(open(os.path.join(top, 'evil')).read())\n"
            "    except OSError:\n"
            "        pass\n"
            "print(seen)\n"
        )
        for _ in range(10):
            assert restart(server, sid, "python") == 200
            assert marker not in output(execute(server, sid, "python", reader))
        server.delete(sid)


def _processes_in(folder: Path) -> list[str]:
    """The command lines of the host's processes whose working directory is ``folder``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(folder):
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" "))
        except OSError:
            continue
    return [line.decode(errors="replace")[:120] for line in found]


def test_a_session_folder_swapped_for_a_link_never_leads_the_host_there(
    server: Server, host_dir: Path
) -> None:
    """Class 4: a session's ``cwd`` was the host's ``cwd`` for each process it started
    (``Popen(cwd=)``, as root before the sandbox): the code swapped that folder for a
    link, and a restart had the host follow it into a folder of the host's choosing
    (on a hung mount, the whole server would have hung there)."""
    sid = server.create(languages=["python", "shell"], cwd="proj")
    try:
        swap = f"cd .. && mv proj proj.real && ln -s {host_dir} proj && echo swapped"
        assert "swapped" in output(execute(server, sid, "shell", swap))
        for language in ("shell", "python"):
            # Inside the sandbox the link leads to a folder that is not there: the
            # new interpreter cannot start (409), the session's own loss.
            assert restart(server, sid, language) in (200, 409)
            assert _processes_in(host_dir) == [], language
        assert not any(host_dir.iterdir())
    finally:
        server.delete(sid)


def test_the_sandbox_never_runs_as_host_root(server: Server, account: Account) -> None:
    """Class 4: under a root server, uid 1000 inside was uid 0 outside and
    /proc/sys was writable (kernel.core_pattern ran a script as host root);
    nested user namespaces worked too."""
    sid = server.create(languages=["python"])
    name = "owned-" + secrets.token_hex(6)
    code = (
        "import os\n"
        f"open({name!r}, 'w').write('x')\n"
        "value = open('/proc/sys/kernel/core_pattern').read()\n"
        "try:\n"
        "    open('/proc/sys/kernel/core_pattern', 'w').write(value)\n"
        "    print('sysctl-writable')\n"
        "except OSError as exc:\n"
        "    print('sysctl-refused', exc)\n"
        "try:\n"
        "    open('/proc/sysrq-trigger', 'w').write('h')\n"
        "    print('sysrq-writable')\n"
        "except OSError as exc:\n"
        "    print('sysrq-refused', exc)\n"
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER\n"
        "    print('userns-created')\n"
        "else:\n"
        "    print('userns-refused', os.strerror(ctypes.get_errno()))\n"
    )
    text = output(execute(server, sid, "python", code))
    assert "sysctl-refused" in text and "userns-refused" in text, text
    assert "sysrq-writable" not in text, text
    owners = [
        os.lstat(os.path.join(folder, name)).st_uid
        for folder, _dirs, files in os.walk(server.data_dir)
        if name in files
    ]
    assert len(owners) == 1, owners
    assert owners[0] != 0, "the sandbox's files belong to host root"
    if account.root:
        assert owners[0] >= 1_000_000, owners  # a uid of the reserved range
    server.delete(sid)


def test_a_folder_of_many_files_neither_stalls_nor_bricks_the_server(server: Server) -> None:
    """Class 7: 120k files in the runtime folder blocked the event loop for
    seconds on every launch, then broke starts with E2BIG and restarts with 500."""
    sid = server.create(languages=["python"])
    fill = FIND_WRITABLE + (
        "made = 0\n"
        "for top in writable():\n"
        "    try:\n"
        "        for n in range(120_000):\n"
        "            open(os.path.join(top, f'f{n}'), 'w').close()\n"
        "            made += 1\n"
        "    except OSError:\n"
        "        pass\n"
        "print('made', made)\n"
    )
    assert "made" in output(execute(server, sid, "python", fill))
    worst = 0.0
    done = threading.Event()

    def probe() -> None:
        nonlocal worst
        while not done.is_set():
            started = time.monotonic()
            httpx.get(server.url + "/healthz", timeout=30)
            worst = max(worst, time.monotonic() - started)
            done.wait(0.05)

    watcher = threading.Thread(target=probe)
    watcher.start()
    try:
        for _ in range(2):
            assert restart(server, sid, "python") == 200
    finally:
        done.set()
        watcher.join()
    after = execute(server, sid, "python", "print(6 * 7)")
    assert "42" in output(after) and final_status(after) == "ok", after
    assert worst < 2.0, f"/healthz took {worst:.2f} s while the session restarted"
    server.delete(sid)


def test_an_unprivileged_server_never_shares_a_process_limit_silently(
    account: Account, request: pytest.FixtureRequest
) -> None:
    """Class 8: under an unprivileged server every session shared one RLIMIT_NPROC,
    so one fork bomb starved its neighbours; with no per-session mechanism the
    server must say so and refuse several sessions unless told to accept it."""
    if account.root:
        pytest.skip("a root server gives each session a host uid of its own")
    # Short, like an operator's: a long path is refused before the process limit
    # is looked at (kernels' unix sockets live inside it).
    short = Path(tempfile.mkdtemp(prefix="lmc-"))
    request.addfinalizer(lambda: shutil.rmtree(short, ignore_errors=True))
    data = short / "data"
    data.mkdir()
    os.chown(data, account.uid, account.gid)
    _traversable(short)
    argv = [*as_user(account), sys.executable, "-m", "lmc_runtime", "serve", "--port", "0"]
    argv += ["--data-dir", str(data), "--max-sessions", "4"]
    env = {**os.environ, "LMC_TOKEN": TOKEN}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("the server started with a process limit shared by its sessions")
    assert done.returncode == 2, done
    assert "--allow-shared-limits" in done.stderr and "process limit" in done.stderr


def test_a_deep_tree_never_breaks_the_session_s_teardown(server: Server) -> None:
    """Class 7, depth: a tree 3,000 folders deep (deeper than PATH_MAX) made
    shutil.rmtree, which recurses, raise RecursionError when the session ended,
    so its folder was left on the host."""
    sid = server.create(languages=["python"])
    code = (
        "import os\n"
        "fd = os.open('.', os.O_RDONLY)\n"
        "for _ in range(3000):\n"
        "    os.mkdir('d', dir_fd=fd)\n"
        "    deeper = os.open('d', os.O_RDONLY, dir_fd=fd)\n"
        "    os.close(fd); fd = deeper\n"
        "print('deep')\n"
    )
    assert "deep" in output(execute(server, sid, "python", code))
    _deleted_without_a_trace(server, sid)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("/healthz").status_code == 200


def test_folders_the_code_locks_never_outlive_the_session(server: Server) -> None:
    """Class 7, permissions: on an unprivileged server, a folder the code set to
    000 and another set to 0555 (files in both) stayed on the host after the
    session was deleted, as teardown never gave the owner its permissions back."""
    since = len(server.log())
    sid = server.create(languages=["python"])
    code = (
        "import os\n"
        "os.makedirs('locked/inner'); os.makedirs('ro/sub')\n"
        "for name in ('locked/inner/big', 'ro/big', 'ro/sub/big'):\n"
        "    open(name, 'wb').write(b'x' * (1 << 20))\n"
        "for name, mode in (('locked/inner', 0o555), ('locked', 0), ('ro/sub', 0o300),\n"
        "                   ('ro', 0o555)):\n"
        "    os.chmod(name, mode)\n"
        "print('locked')\n"
    )
    assert "locked" in output(execute(server, sid, "python", code))
    _deleted_without_a_trace(server, sid)
    assert "cannot remove" not in server.log()[since:]


def _deleted_without_a_trace(server: Server, sid: str) -> None:
    """Delete the session, and wait (bounded) for its folder to be gone from the host."""
    server.delete(sid)
    folder = server.data_dir / "sessions" / sid
    deadline = time.monotonic() + 60
    while os.path.lexists(folder):
        assert time.monotonic() < deadline, f"{folder} was left behind: {server.log()[-3000:]}"
        time.sleep(0.1)
