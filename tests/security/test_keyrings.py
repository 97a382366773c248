"""Class 10, kernel interfaces a sandbox has no use for: the session keyring the
server was started in, and keyrings, BPF, perf events, userfaultfd, io_uring and
ptrace attach from inside a sandbox.

systemd starts a service in a session keyring of its own, and a login through
``pam_keyinit`` does the same: the operator's keys live there, and every
process the server starts inherited it. Each test starts the server in a fresh
session keyring that holds a key, as such a host does."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.integration.service.server import Server, output

from .attacks import execute
from .harness import Account, serve_as

pytestmark = pytest.mark.timeout(300)

SECRET = "operator-secret-7d1c"
KEY = "lmc-operator-key"

#: Runs the rest of its command line in a new session keyring holding KEY.
_IN_KEYRING = f"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
keyctl, add_key = {{"x86_64": (250, 248), "aarch64": (219, 217)}}[os.uname().machine]
if libc.syscall(keyctl, 1, None) < 0:  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
    sys.exit("join: " + os.strerror(ctypes.get_errno()))
secret = {SECRET!r}.encode()
if libc.syscall(add_key, b"user", {KEY!r}.encode(), secret, len(secret), ctypes.c_long(-3)) < 0:
    sys.exit("add_key: " + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[1], sys.argv[1:])
"""

#: Python run in a session: look for a key in its session keyring, read it, add one.
_KEYS_CODE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
keyctl, add_key = {"x86_64": (250, 248), "aarch64": (219, 217)}[os.uname().machine]
def call(*args):
    result = libc.syscall(*[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return result, ctypes.get_errno()
for name in (%r, "lmc-planted-by-a"):
    found, errno = call(keyctl, 10, -3, b"user", name.encode(), 0)  # KEYCTL_SEARCH in @s
    print("search", name, found, errno)
    if found > 0:
        buffer = ctypes.create_string_buffer(256)
        size, errno = call(keyctl, 11, found, buffer, 256)  # KEYCTL_READ
        print("read", name, buffer.raw[: max(size, 0)].decode(errors="replace"))
if %r:
    added, errno = call(add_key, b"user", b"lmc-planted-by-a", b"planted", 7, -3)
    print("added", added, errno)
print(open("/proc/keys").read())
"""


def _keys_code(plant: bool) -> str:
    return _KEYS_CODE % (KEY, plant)


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    """The server under attack, started in a session keyring that holds KEY."""
    prefix = (sys.executable, "-c", _IN_KEYRING)
    with serve_as(account, "--pool-size", "0", "--max-sessions", "3", prefix=prefix) as running:
        yield running


def _shell(code: str) -> str:
    return f"{sys.executable} - <<'EOF'\n{code}\nEOF\n"


@pytest.mark.parametrize("language", ["python", "shell"])
def test_the_servers_session_keyring_is_out_of_reach(server: Server, language: str) -> None:
    """Regression: every sandbox shared the session keyring the server started
    in: code read the operator's key from @s, and a key session A added there
    was read by session B."""
    first = server.create(languages=[language])
    second = server.create(languages=[language])
    run = (lambda code: code) if language == "python" else _shell
    try:
        seen_by_a = output(execute(server, first, language, run(_keys_code(plant=True))))
        seen_by_b = output(execute(server, second, language, run(_keys_code(plant=False))))
    finally:
        server.delete(first)
        server.delete(second)
    for seen in (seen_by_a, seen_by_b):
        assert "search lmc-operator-key" in seen, seen
        assert SECRET not in seen and "read " not in seen, seen
        listed = [line for line in seen.splitlines() if not line.startswith(("search", "added"))]
        assert not [line for line in listed if KEY in line or "lmc-planted" in line], seen


#: Python run in a session: call each interface and print how it failed.
_INTERFACES_CODE = r"""
import ctypes, errno, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
numbers = {
    "x86_64": dict(keyctl=250, add_key=248, request_key=249, bpf=321, perf_event_open=298,
                   userfaultfd=323, ptrace=101, kcmp=312),
    "aarch64": dict(keyctl=219, add_key=217, request_key=218, bpf=280, perf_event_open=241,
                    userfaultfd=282, ptrace=117, kcmp=272),
}[os.uname().machine]
numbers.update(io_uring_setup=425, io_uring_enter=426, io_uring_register=427, pidfd_getfd=438)
def call(name, *args):
    result = libc.syscall(numbers[name], *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    print(name, result, errno.errorcode.get(ctypes.get_errno()) if result < 0 else "ok")
attr = ctypes.create_string_buffer(128)
ctypes.c_uint32.from_buffer(attr, 0).value = 1      # PERF_TYPE_SOFTWARE
ctypes.c_uint32.from_buffer(attr, 4).value = 128    # its size
ctypes.c_uint64.from_buffer(attr, 40).value = 1 << 5 | 1 << 6  # exclude kernel, hv
params = ctypes.create_string_buffer(120)
call("keyctl", 0, -3, 0)                       # KEYCTL_GET_KEYRING_ID @s
call("add_key", b"user", b"k", b"v", 1, -3)
call("request_key", b"user", b"k", None, 0)
call("bpf", 5, ctypes.create_string_buffer(128), 128)  # BPF_PROG_LOAD
call("perf_event_open", attr, 0, -1, -1, 0)
call("userfaultfd", 1)                          # UFFD_USER_MODE_ONLY
call("io_uring_setup", 4, params)
call("io_uring_enter", 0, 0, 0, 0, None, 0)
call("io_uring_register", 0, 0, None, 0)
grandchild = subprocess.Popen(["sh", "-c", "sleep 30 & echo $!; wait"], stdout=subprocess.PIPE)
target = int(grandchild.stdout.readline())
call("ptrace", 16, target, 0, 0)                # PTRACE_ATTACH, not a child
call("ptrace", 0x4206, target, 0, 0)            # PTRACE_SEIZE
call("kcmp", os.getpid(), target, 0, 0, 0)
pidfd = os.pidfd_open(target)
call("pidfd_getfd", pidfd, 0, 0)
os.kill(target, 9)
grandchild.wait()
"""

#: What each interface must answer inside a sandbox.
_REFUSED = {
    "keyctl": "ENOSYS",
    "add_key": "ENOSYS",
    "request_key": "ENOSYS",
    "bpf": "ENOSYS",
    "perf_event_open": "ENOSYS",
    "userfaultfd": "ENOSYS",
    "io_uring_setup": "ENOSYS",
    "io_uring_enter": "ENOSYS",
    "io_uring_register": "ENOSYS",
    "ptrace": "EPERM",
    "kcmp": "EPERM",
    "pidfd_getfd": "EPERM",
}


@pytest.mark.parametrize("language", ["python", "shell"])
def test_kernel_interfaces_sandboxes_have_no_use_for_are_refused(
    server: Server, language: str
) -> None:
    """Regression: sandboxed code could use keyrings, perf events, userfaultfd,
    io_uring and attach ptrace to any process of its own; a seccomp filter now
    refuses them (ENOSYS, as a kernel without them; EPERM for ptrace attach),
    in forked kernels too."""
    sid = server.create(languages=[language])
    run = (lambda code: code) if language == "python" else _shell
    try:
        text = output(execute(server, sid, language, run(_INTERFACES_CODE)))
    finally:
        server.delete(sid)
    answers: dict[str, set[str]] = {}
    for line in text.splitlines():
        name, _, result = line.partition(" ")
        if name in _REFUSED:
            answers.setdefault(name, set()).add(result.split()[-1])
    assert set(answers) == set(_REFUSED), text
    for name, wanted in _REFUSED.items():
        assert answers[name] == {wanted}, (name, text)
