"""The seccomp filter every sandboxed process runs under, and its fresh keyring.

A classic BPF program (``struct sock_filter`` records, as bwrap's ``--seccomp
FD`` and ``prctl(PR_SET_SECCOMP)`` take it) that refuses the kernel interfaces
sandboxed code has no use for:

* keyrings (``keyctl``, ``add_key``, ``request_key``), ``bpf``,
  ``perf_event_open``, ``userfaultfd`` and io_uring answer ``ENOSYS``, as a
  kernel built without them does (programs fall back: libuv, for io_uring);
* ``ptrace`` attach (``PTRACE_ATTACH``, ``PTRACE_SEIZE``; a child may still ask
  to be traced), ``process_vm_readv``/``writev``, ``kcmp``, ``pidfd_getfd``,
  ``process_madvise`` and the privileged ones (modules, kexec, reboot, swap,
  accounting, quotas, ``syslog``, ``open_by_handle_at``, fanotify) answer
  ``EPERM``.

The filter checks the calling convention first: x86-64 (and its x32 numbers,
all refused), i386 (``int 0x80`` on an x86-64 host) and AArch64 each have their
own numbers; any other is refused outright.

Stdlib only (``struct``; ``ctypes`` only where a filter or a keyring is
installed by hand): the exec wrapper and the fork server load it by its path.
"""

import struct

__all__ = ["install", "new_session_keyring", "program"]

_AUDIT_ARCH_X86_64 = 0xC000003E
_AUDIT_ARCH_I386 = 0x40000003
_AUDIT_ARCH_AARCH64 = 0xC00000B7
_X32_SYSCALL_BIT = 0x40000000

_ENOSYS = 38
_EPERM = 1
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

# Classic BPF opcodes.
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
# Offsets in struct seccomp_data.
_NR, _ARCH, _ARG0 = 0, 4, 16

_PTRACE_ATTACH = 16
_PTRACE_SEIZE = 0x4206

#: Interfaces refused as missing (ENOSYS): what programs already cope with.
_MISSING = (
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)
#: Interfaces refused as not permitted (EPERM).
_DENIED = (
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "process_madvise",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "quotactl",
    "syslog",
    "open_by_handle_at",
    "lookup_dcookie",
    "fanotify_init",
    "uselib",
)

_COMMON = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "pidfd_getfd": 438,
    "process_madvise": 440,
}
_X86_64 = {
    **_COMMON,
    **dict(keyctl=250, add_key=248, request_key=249, bpf=321, perf_event_open=298),
    **dict(userfaultfd=323, ptrace=101, process_vm_readv=310, process_vm_writev=311),
    **dict(kcmp=312, kexec_load=246, kexec_file_load=320, init_module=175),
    **dict(finit_module=313, delete_module=176, acct=163, swapon=167, swapoff=168),
    **dict(reboot=169, quotactl=179, syslog=103, open_by_handle_at=304),
    **dict(lookup_dcookie=212, fanotify_init=300, uselib=134),
}
_I386 = {
    **_COMMON,
    **dict(keyctl=288, add_key=286, request_key=287, bpf=357, perf_event_open=336),
    **dict(userfaultfd=374, ptrace=26, process_vm_readv=347, process_vm_writev=348),
    **dict(kcmp=349, kexec_load=283, init_module=128, finit_module=350),
    **dict(delete_module=129, acct=51, swapon=87, swapoff=115, reboot=88, quotactl=131),
    **dict(syslog=103, open_by_handle_at=342, lookup_dcookie=253, fanotify_init=338),
    **dict(uselib=86),
}
_AARCH64 = {
    **_COMMON,
    **dict(keyctl=219, add_key=217, request_key=218, bpf=280, perf_event_open=241),
    **dict(userfaultfd=282, ptrace=117, process_vm_readv=270, process_vm_writev=271),
    **dict(kcmp=272, kexec_load=104, kexec_file_load=294, init_module=105),
    **dict(finit_module=273, delete_module=106, acct=89, swapon=224, swapoff=225),
    **dict(reboot=142, quotactl=60, syslog=116, open_by_handle_at=265),
    **dict(lookup_dcookie=18, fanotify_init=262),
}
_ARCHES = (
    (_AUDIT_ARCH_X86_64, _X86_64),
    (_AUDIT_ARCH_I386, _I386),
    (_AUDIT_ARCH_AARCH64, _AARCH64),
)

_Insn = tuple[int, int, int, int]


def _stmt(code: int, k: int) -> _Insn:
    return (code, 0, 0, k)


def _jump(code: int, k: int, true: int, false: int) -> _Insn:
    return (code, true, false, k)


def _refuse(errno: int) -> _Insn:
    return _stmt(_RET, _RET_ERRNO | errno)


def _section(numbers: dict[str, int], *, x32: bool) -> list[_Insn]:
    """One calling convention's checks; every path through it returns."""
    code = [_stmt(_LD_ABS, _NR)]
    if x32:  # the x32 numbers of an x86-64 kernel: nothing here uses them
        code += [_jump(_JGE, _X32_SYSCALL_BIT, 0, 1), _refuse(_ENOSYS)]
    for names, errno in ((_MISSING, _ENOSYS), (_DENIED, _EPERM)):
        for name in names:
            if name in numbers:
                code += [_jump(_JEQ, numbers[name], 0, 1), _refuse(errno)]
    # ptrace: attaching to a process is refused; the rest (a tracee asking, a
    # tracer acting on what it already traces) is not.
    code += [
        _jump(_JEQ, numbers["ptrace"], 0, 5),
        _stmt(_LD_ABS, _ARG0),
        _jump(_JEQ, _PTRACE_ATTACH, 2, 0),
        _jump(_JEQ, _PTRACE_SEIZE, 1, 0),
        _stmt(_RET, _RET_ALLOW),
        _refuse(_EPERM),
        _stmt(_RET, _RET_ALLOW),
    ]
    return code


def program() -> bytes:
    """The filter, as ``struct sock_filter`` records in this machine's byte order."""
    code = [_stmt(_LD_ABS, _ARCH)]
    for arch, numbers in _ARCHES:
        section = _section(numbers, x32=arch == _AUDIT_ARCH_X86_64)
        code += [_jump(_JEQ, arch, 0, len(section)), *section]
    code.append(_refuse(_ENOSYS))  # a calling convention of no known numbers
    return b"".join(struct.pack("=HBBI", *insn) for insn in code)


def install(filter_program: bytes) -> None:
    """Put this thread under ``filter_program`` (``no_new_privs`` must be set):
    for a process that starts its sandboxed program without bwrap."""
    import ctypes
    import os

    class _Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    data = ctypes.create_string_buffer(filter_program, len(filter_program))
    fprog = _Fprog(len(filter_program) // 8, ctypes.cast(data, ctypes.c_void_p))
    # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"seccomp: {os.strerror(errno)}")


def new_session_keyring() -> None:
    """Give this process an empty session keyring of its own, in place of the one
    it inherited (where the server's, and its operator's, keys are). A kernel
    without keyrings has nothing to share: that is fine."""
    import ctypes
    import os

    number = {"x86_64": 250, "aarch64": 219, "i686": 288}.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"no keyctl number known for {os.uname().machine}")
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long
    if syscall(number, 1, None) < 0:  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
        errno = ctypes.get_errno()
        if errno != _ENOSYS:
            raise OSError(errno, f"a session keyring of its own: {os.strerror(errno)}")
