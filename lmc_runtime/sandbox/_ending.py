"""How a sandboxed process is started, supervised and ended: the part of the
exec wrapper (``_exec.py``) that stays as a parent.

bwrap, and the init process it runs in the sandbox's PID namespace, end with
``128+N`` when their child was killed by signal N (its ``--json-status-fd``
says the same): an interpreter killed by SIGKILL and one that exited with
status 137 would look alike. So the supervisor opens a pipe, names its
descriptor in ``LMC_SANDBOX_STATUS_FD``, and the wrapper inside (``--report``)
writes the real status there; the supervisor then ends the way that says,
re-raising the signal on itself. Without a report (bwrap failed before the
wrapper ran) it ends the way bwrap did.
"""

# ruff: noqa: SIM105
from __future__ import annotations

import os
import resource
import select
import sys

# See _exec.py: not ``typing`` nor ``signal``, which cost every sandboxed process.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any, NoReturn
else:
    import _signal as signal

__all__ = ["STATUS_FD", "die_with_parent", "exit_like", "report", "status_pipe", "supervise"]

#: Where the sandboxed wrapper finds the descriptor it reports its child's end on.
STATUS_FD = "LMC_SANDBOX_STATUS_FD"
_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: Signals whose default action stops a process rather than ending it.
_STOPPING = (signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)
_PR_SET_PDEATHSIG = 1


def _fail(text: str) -> NoReturn:
    sys.stderr.write(f"lmc sandbox: {text}\n")
    sys.stderr.flush()
    os._exit(127)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _start(argv: list[str], env: dict[str, str], sigint: Any) -> int:
    """Fork and exec ``argv`` (with SIGINT disposition ``sigint``, unless None);
    this process ignores SIGINT and forwards the other signals it is sent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    child = os.fork()
    if child == 0:
        if sigint is not None:
            signal.signal(signal.SIGINT, sigint)
        try:
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            _fail(f"cannot run {argv[0]}: {exc}")

    def forward(number: int, _frame: object) -> None:
        try:
            os.kill(child, number)
        except ProcessLookupError:
            pass

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    return child


def status_pipe(env: dict[str, str]) -> tuple[int, int]:
    """The pipe the wrapper inside reports on; its write end is named in ``env``."""
    report, write = os.pipe()
    os.set_inheritable(write, True)
    env[STATUS_FD] = str(write)
    return report, write


def supervise(
    argv: list[str], env: dict[str, str], parent: int, sigint: Any, fds: tuple[int, ...]
) -> NoReturn:
    """Run ``argv`` as a child; end with it, and end it if process ``parent`` ends.
    ``fds``: the status pipe's ends, then descriptors only the child needs."""
    parent_fd = _pidfd(parent)
    if os.getppid() != parent:  # the runtime ended before (or while) this one started
        _fail(f"the process that started this one ({parent}) has ended")
    report, *handed = fds
    child = _start(argv, env, sigint)
    for handed_fd in handed:
        os.close(handed_fd)
    child_fd = _pidfd(child)
    watched = select.poll()
    for fd in (child_fd, parent_fd):
        if fd is not None:
            watched.register(fd, select.POLLIN)
    while child_fd is not None:
        ready = [fd for fd, _ in watched.poll()]
        if child_fd in ready:
            break
        if parent_fd in ready:  # the runtime is gone: so is everything it started
            os.kill(child, signal.SIGKILL)
            watched.unregister(parent_fd)
    _, status = os.waitpid(child, 0)
    reported = _reported(report)
    exit_like(status if reported is None else reported)


def die_with_parent(parent: int) -> None:
    """Be killed (SIGKILL) when the thread that started this process ends, and go
    on only if process ``parent`` still is this process's parent (it did not end
    before the signal was asked for). ``PR_SET_PDEATHSIG`` outlasts ``execve``
    (but a set-user-ID program's) and a change of user clears it: call it last,
    just before the exec."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        _fail(f"PR_SET_PDEATHSIG: {os.strerror(ctypes.get_errno())}")
    if os.getppid() != parent:
        _fail(f"the process that started this one ({parent}) has ended")


def _reported(fd: int) -> int | None:
    """The wait status the wrapper inside wrote on ``fd`` (it has ended), or None."""
    os.set_blocking(fd, False)
    try:
        status = int(os.read(fd, 32).decode("ascii"))
    except (OSError, ValueError):
        return None
    if not 0 <= status <= 0xFFFF or not (os.WIFEXITED(status) or os.WIFSIGNALED(status)):
        return None
    return status


def report(argv: list[str], env: dict[str, str], sigint: Any) -> None:
    """Inside the sandbox: run ``argv`` as a child, write how it ended, end the same way.
    Returns (for a plain exec) only if there is no descriptor to report on."""
    try:
        fd = int(env.pop(STATUS_FD))
        os.set_inheritable(fd, False)
    except (ValueError, OSError):
        return
    child = _start(argv, env, sigint)
    _, status = os.waitpid(child, 0)
    try:
        os.write(fd, b"%d\n" % status)
    except OSError:
        pass
    exit_like(status)


def exit_like(status: int) -> NoReturn:
    """End this process the way a child with wait ``status`` ended: the same exit
    code, or the same signal (re-raised on itself with its default action)."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        os._exit(code & 0xFF)
    signum = -code
    if signum not in _STOPPING:
        try:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core of this process
        except (OSError, ValueError):
            pass
        try:
            if signum != signal.SIGKILL:
                signal.signal(signum, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
            os.kill(os.getpid(), signum)
        except (OSError, ValueError):
            pass
    os._exit((128 + signum) & 0xFF)  # a signal that does not end this process
