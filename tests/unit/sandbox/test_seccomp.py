"""The sandbox's seccomp filter, loaded into a child process of the test."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from lmc_runtime.sandbox import _seccomp

#: Put itself under the filter, then print what each call answered.
_CHILD = r"""
import ctypes, errno, mmap, sys
sys.path.insert(0, sys.argv[1])
import _seccomp
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.prctl(38, 1, 0, 0, 0)  # no_new_privs
_seccomp.install(_seccomp.program())
def call(label, number, *args):
    result = libc.syscall(number, *[ctypes.c_long(a) for a in args])
    print(label, errno.errorcode.get(ctypes.get_errno()) if result < 0 else "ok")
call("keyctl", 250, 0, -3, 0)
call("io_uring_setup", 425, 0, 0)
call("getpid", 39)
call("ptrace_attach", 101, 16, 1, 0, 0)
call("ptrace_peek", 101, 2, 1, 0, 0)   # PTRACE_PEEKDATA of a process it does not trace
call("x32_getpid", 39 | 0x40000000)
def int80(number, ebx, ecx):
    # push rbx; mov eax, number; mov ebx, ebx; mov ecx, ecx; xor edx, edx; int 0x80;
    # pop rbx; movsxd rax, eax; ret
    code = (b"\x53\xb8" + number.to_bytes(4, "little") + b"\xbb" + (ebx & 0xFFFFFFFF).to_bytes(4, "little")
            + b"\xb9" + (ecx & 0xFFFFFFFF).to_bytes(4, "little") + b"\x31\xd2\xcd\x80\x5b\x48\x63\xc0\xc3")
    memory = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    memory.write(code)
    return ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(memory)))()
print("i386_keyctl", errno.errorcode.get(-int80(288, 0, -3), "ok"))
print("i386_getpid", "ok" if int80(20, 0, 0) > 0 else "failed")
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 numbers and code")
def test_the_filter_refuses_by_every_calling_convention() -> None:
    """Keyrings and io_uring answer ENOSYS and ptrace attach EPERM, by their x86-64
    numbers and by i386's (``int 0x80``); x32 numbers are all refused; the rest,
    and ptrace requests other than attaching, go through."""
    folder = Path(_seccomp.__file__).parent
    done = subprocess.run(
        [sys.executable, "-I", "-c", _CHILD, str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    answers = dict(line.split() for line in done.stdout.splitlines())
    assert answers == {
        "keyctl": "ENOSYS",
        "io_uring_setup": "ENOSYS",
        "getpid": "ok",
        "ptrace_attach": "EPERM",
        "ptrace_peek": "ESRCH",
        "x32_getpid": "ENOSYS",
        "i386_keyctl": "ENOSYS",
        "i386_getpid": "ok",
    }, done.stderr


def test_the_program_is_whole_records_within_bpfs_size() -> None:
    """Eight bytes a record, under the kernel's 4096 instructions."""
    program = _seccomp.program()
    assert len(program) % 8 == 0 and 0 < len(program) // 8 < 4096
