"""The exec wrapper every sandboxed process starts through.

Run as ``python -I -S _exec.py [options] -- argv``: it imports nothing from the
package (so it starts in a few milliseconds, inside or outside the sandbox),
applies its options to itself, then replaces itself with ``argv``. Options:

``--cgroup FILE``
    write this process's pid into FILE (a ``cgroup.procs`` file): it and
    everything it starts are then accounted and limited by that cgroup.
``--rlimit NAME=VALUE``
    set the soft and hard limit ``NAME`` (``as``, ``data``, ``fsize``, ``cpu``,
    ``nproc``, ``core``) to VALUE.
``--sigint ignore|default``
    the SIGINT disposition ``argv`` starts with. The sandbox's own processes
    ignore SIGINT, so an interrupt sent to the process group reaches only the
    code inside, which starts with the default disposition again.
``--user UID:GID``
    drop to this host uid and gid (no supplementary groups) once the other
    options are applied: a server running as root never starts a sandbox as
    root.
``--unset NAME``
    remove NAME from the environment.
``--chdir DIR``
    start ``argv`` in DIR, entered once the other options are applied (inside
    the sandbox, as its user): the host never enters a folder the code can
    write, where a link could lead it anywhere.
``--bwrap-env``
    ``argv`` is a bwrap command line: give the environment to the sandboxed
    command as ``--clearenv --setenv NAME VALUE ...`` and start bwrap itself
    with an empty environment; and put the sandbox under the seccomp filter of
    ``_seccomp.py`` (``--seccomp FD``).
``--supervise PID``
    stay as the parent of ``argv`` instead of becoming it; PID is the runtime
    process that starts this one. ``bwrap
    --die-with-parent`` uses ``PR_SET_PDEATHSIG``, which fires when the *thread*
    that started a process ends: a backend that starts its interpreter from a
    worker thread would see it killed when that thread is retired. The
    supervisor has one thread, so bwrap lives exactly as long as it does; it
    kills bwrap when the runtime process ends (a pidfd, no polling; it refuses to
    start if the runtime is already gone),
    forwards SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2, and ends the way
    the sandboxed process ended (same exit code, or same signal; see below).
``--report``
    inside the sandbox: stay as the parent of ``argv`` too, and write how it
    ended (its wait status) to the descriptor the supervisor passed down.

On the host (every run but ``--report``'s, which is inside the sandbox), once
dropped to ``--user``, it takes an empty session keyring of its own for
``argv`` and all it starts, in place of the server's (where the operator's keys
are: systemd and ``pam_keyinit`` give services and logins one).

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

# Not ``typing`` nor ``contextlib``: importing them took a third of this
# wrapper's start (5.5 of 18 ms of CPU), paid by every sandboxed process, so
# errors are suppressed with try/except (hence the noqa above). Nor ``signal``,
# which builds its enums with ``enum`` (5 ms more): ``_signal`` is the same
# functions and numbers. Type checkers read this block; Python never runs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any, NoReturn
else:
    import _signal as signal

__all__ = ["RLIMITS"]

RLIMITS = {
    "as": resource.RLIMIT_AS,
    "data": resource.RLIMIT_DATA,
    "fsize": resource.RLIMIT_FSIZE,
    "cpu": resource.RLIMIT_CPU,
    "nproc": resource.RLIMIT_NPROC,
    "core": resource.RLIMIT_CORE,
}
#: Where the sandboxed wrapper finds the descriptor it reports its child's end on.
STATUS_FD = "LMC_SANDBOX_STATUS_FD"
_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: Signals whose default action stops a process rather than ending it.
_STOPPING = (signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)


def _fail(text: str) -> NoReturn:
    sys.stderr.write(f"lmc sandbox: {text}\n")
    sys.stderr.flush()
    os._exit(127)


def _sibling(name: str) -> Any:
    """The stdlib-only module ``name`` beside this file (``-I`` leaves its folder
    off ``sys.path``)."""
    folder = os.path.dirname(os.path.abspath(__file__))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return __import__(name)


def seccomp_fd() -> int:
    """An inheritable descriptor holding the sandbox's seccomp filter, for bwrap's
    ``--seccomp``."""
    fd = os.memfd_create("lmc-seccomp", 0)
    os.write(fd, _sibling("_seccomp").program())
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    return fd


def _own_keyring() -> None:
    try:
        _sibling("_seccomp").new_session_keyring()
    except OSError as exc:
        _fail(str(exc))


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


def _status_pipe(env: dict[str, str]) -> tuple[int, int]:
    """The pipe the wrapper inside reports on; its write end is named in ``env``."""
    report, write = os.pipe()
    os.set_inheritable(write, True)
    env[STATUS_FD] = str(write)
    return report, write


def _supervise(
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


def _report(argv: list[str], env: dict[str, str], sigint: Any) -> None:
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


class _Settings:
    """What the options ask for beyond what :func:`_apply` does at once."""

    def __init__(self) -> None:
        self.env = dict(os.environ)
        self.bwrap_env = self.report = False
        self.supervise: int | None = None
        self.user: tuple[int, int] | None = None
        self.sigint: Any = None
        self.chdir: str | None = None


def _apply(option: str, value: str, settings: _Settings) -> None:
    """Apply one option that takes a value (a cgroup, a limit), or note it."""
    if option == "--cgroup":
        with open(value, "w", encoding="ascii") as procs:
            procs.write(str(os.getpid()))
    elif option == "--rlimit":
        name, _, number = value.partition("=")
        limit = int(number)
        resource.setrlimit(RLIMITS[name], (limit, limit))
    elif option == "--sigint":
        settings.sigint = signal.SIG_IGN if value == "ignore" else signal.SIG_DFL
    elif option == "--supervise":
        settings.supervise = int(value)
    elif option == "--user":
        uid, _, gid = value.partition(":")
        settings.user = (int(uid), int(gid))
    elif option == "--unset":
        settings.env.pop(value, None)
    elif option == "--chdir":
        settings.chdir = value
    else:
        _fail(f"unknown option {option}")


def _parse(options: list[str]) -> _Settings:
    settings = _Settings()
    index = 0
    while index < len(options):
        option = options[index]
        if option in ("--bwrap-env", "--report"):
            settings.bwrap_env |= option == "--bwrap-env"
            settings.report |= option == "--report"
            index += 1
            continue
        if index + 1 >= len(options):
            _fail(f"{option} needs a value")
        value = options[index + 1]
        index += 2
        try:
            _apply(option, value, settings)
        except (OSError, ValueError, KeyError) as exc:
            _fail(f"{option} {value}: {exc}")
    return settings


def _drop_to(user: tuple[int, int]) -> None:
    try:
        os.setgroups([])
        os.setgid(user[1])
        os.setuid(user[0])
    except OSError as exc:
        _fail(f"--user {user[0]}:{user[1]}: {exc}")
    if os.getuid() != user[0] or os.geteuid() != user[0]:
        _fail(f"could not drop to uid {user[0]}")


def main(args: list[str]) -> None:
    if "--" not in args:
        _fail("usage: _exec.py [options] -- argv")
    split = args.index("--")
    options, argv = args[:split], args[split + 1 :]
    if not argv:
        _fail("no command given")
    settings = _parse(options)
    env = settings.env
    if settings.user is not None:
        _drop_to(settings.user)
    if not settings.report:  # on the host (inside, the seccomp filter refuses keyrings)
        _own_keyring()
    if settings.chdir is not None:
        try:
            os.chdir(settings.chdir)
        except OSError as exc:
            _fail(f"--chdir {settings.chdir}: {exc}")
        env["PWD"] = settings.chdir
    if settings.report and STATUS_FD in env:
        _report(argv, env, settings.sigint)
    if settings.sigint is not None:
        signal.signal(signal.SIGINT, settings.sigint)
    pipe = _status_pipe(env) if settings.supervise is not None else None
    handed: list[int] = []
    if settings.bwrap_env:
        handed.append(seccomp_fd())
        extra = ["--seccomp", str(handed[-1]), "--clearenv"]
        for name, value in env.items():
            extra += ["--setenv", name, value]
        argv = [argv[0], *extra, *argv[1:]]
        env = {}
    if settings.supervise is not None and pipe is not None:
        _supervise(argv, env, settings.supervise, settings.sigint, (*pipe, *handed))
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        _fail(f"cannot run {argv[0]}: {exc}")


if __name__ == "__main__":
    main(sys.argv[1:])
