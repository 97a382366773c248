"""Attacks on the sandbox's seccomp filter through the doors it left open:
new namespaces (``unshare``, ``clone3``), keyrings reached through ``syscall()``,
and keyrings shared between sessions by the sandbox user."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.integration.service.server import Server, output

from .attacks import execute
from .harness import ROOT, serve_as

pytestmark = pytest.mark.timeout(300)

#: Python run inside the sandbox: each probe in a child of its own (a new
#: namespace would change the kernel's), printing what the calls answered.
_PROBES = r"""
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000

def in_child(probe):
    pid = os.fork()
    if pid == 0:
        try:
            code = probe()
        except BaseException:
            code = 99
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)

def unshare_user():
    ok = libc.unshare(CLONE_NEWUSER)
    return 0 if ok == 0 else 100 + ctypes.get_errno()

def unshare_user_net():
    ok = libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS)
    return 0 if ok == 0 else 100 + ctypes.get_errno()

def clone3_user():
    args = (ctypes.c_uint64 * 11)()
    args[0] = CLONE_NEWUSER
    args[4] = 17  # exit_signal: SIGCHLD
    ret = libc.syscall(435, ctypes.byref(args), ctypes.c_size_t(88))
    if ret == 0:
        os._exit(0)
    if ret < 0:
        return 100 + ctypes.get_errno()
    os.waitpid(ret, 0)
    return 0

found = {name: in_child(probe) for name, probe in
         [("unshare_user", unshare_user), ("unshare_user_net", unshare_user_net),
          ("clone3_user", clone3_user)]}
# keyctl(KEYCTL_GET_KEYRING_ID, @s/@u/@us, 0) through syscall(): the numbers,
# not glibc's wrappers, are what the filter must see.
for name, ring in (("session", -3), ("user", -4), ("user_session", -5)):
    ret = libc.syscall(250, 0, ring, 0)
    found["keyctl_" + name] = ret if ret >= 0 else -ctypes.get_errno()
print("PROBES" + json.dumps(found))
"""


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve_as(ROOT, "--pool-size", "0", "--max-sessions", "4") as running:
        yield running


def _probes(server: Server, session_id: str) -> dict[str, int]:
    text = output(execute(server, session_id, "python", _PROBES))
    line = next(line for line in text.splitlines() if line.startswith("PROBES"))
    return {k: int(v) for k, v in json.loads(line[len("PROBES") :]).items()}


def test_keyrings_stay_out_of_reach_through_raw_syscalls(server: Server) -> None:
    """keyctl by its x86-64 number through syscall() answers ENOSYS for the
    session, user and user-session keyrings, so no two sessions share a keyring."""
    sid = server.create(languages=["python"])
    try:
        found = _probes(server, sid)
    finally:
        server.delete(sid)
    for ring in ("session", "user", "user_session"):
        assert found["keyctl_" + ring] == -38, found


def test_code_cannot_make_new_user_namespaces(server: Server) -> None:
    """unshare(CLONE_NEWUSER) and clone3 with CLONE_NEWUSER are refused inside the
    sandbox: a nested user namespace hands the code CAP_SYS_ADMIN over new mount and
    network namespaces, the kernel surface most container escapes go through."""
    sid = server.create(languages=["python"])
    try:
        found = _probes(server, sid)
    finally:
        server.delete(sid)
    for probe in ("unshare_user", "unshare_user_net", "clone3_user"):
        assert found[probe] > 100, found  # refused with an errno, never made
