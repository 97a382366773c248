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
``--bwrap-env``
    ``argv`` is a bwrap command line: give the environment to the sandboxed
    command as ``--clearenv --setenv NAME VALUE ...`` and start bwrap itself
    with an empty environment.
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
    bwrap ended (same exit code, or same signal).
"""

import os
import resource
import select
import signal
import sys
from typing import NoReturn

__all__: list[str] = []

_RLIMITS = {
    "as": resource.RLIMIT_AS,
    "data": resource.RLIMIT_DATA,
    "fsize": resource.RLIMIT_FSIZE,
    "cpu": resource.RLIMIT_CPU,
    "nproc": resource.RLIMIT_NPROC,
    "core": resource.RLIMIT_CORE,
}


def _fail(text: str) -> None:
    sys.stderr.write(f"lmc sandbox: {text}\n")
    sys.stderr.flush()
    os._exit(127)


_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _supervise(argv: list[str], env: dict[str, str], parent: int) -> None:
    """Run ``argv`` as a child; end with it, and end it if process ``parent`` ends."""
    parent_fd = _pidfd(parent)
    if os.getppid() != parent:  # the runtime ended before (or while) this one started
        _fail(f"the process that started this one ({parent}) has ended")
    child = os.fork()
    if child == 0:
        try:
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            _fail(f"cannot run {argv[0]}: {exc}")
    for signum in _FORWARDED:
        signal.signal(signum, lambda number, _frame: os.kill(child, number))
    child_fd = _pidfd(child)
    watched = [fd for fd in (child_fd, parent_fd) if fd is not None]
    while child_fd is not None:
        ready, _, _ = select.select(watched, [], [])
        if child_fd in ready:
            break
        if parent_fd in ready:  # the runtime is gone: so is everything it started
            os.kill(child, signal.SIGKILL)
            watched.remove(parent_fd)
    _, status = os.waitpid(child, 0)
    exit_like(status)


def exit_like(status: int) -> NoReturn:
    """End this process the way a child with wait ``status`` ended: the same exit
    code, or the same signal (re-raised on itself with its default action)."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        if -code not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


def main(args: list[str]) -> None:
    if "--" not in args:
        _fail("usage: _exec.py [options] -- argv")
    split = args.index("--")
    options, argv = args[:split], args[split + 1 :]
    if not argv:
        _fail("no command given")
    env = dict(os.environ)
    bwrap_env = False
    supervise: int | None = None
    user: tuple[int, int] | None = None
    index = 0
    while index < len(options):
        option = options[index]
        if option == "--bwrap-env":
            bwrap_env = True
            index += 1
            continue
        if index + 1 >= len(options):
            _fail(f"{option} needs a value")
        value = options[index + 1]
        index += 2
        try:
            if option == "--cgroup":
                with open(value, "w", encoding="ascii") as procs:
                    procs.write(str(os.getpid()))
            elif option == "--rlimit":
                name, _, number = value.partition("=")
                limit = int(number)
                resource.setrlimit(_RLIMITS[name], (limit, limit))
            elif option == "--sigint":
                handler = signal.SIG_IGN if value == "ignore" else signal.SIG_DFL
                signal.signal(signal.SIGINT, handler)
            elif option == "--supervise":
                supervise = int(value)
            elif option == "--user":
                uid, _, gid = value.partition(":")
                user = (int(uid), int(gid))
            elif option == "--unset":
                env.pop(value, None)
            else:
                _fail(f"unknown option {option}")
        except (OSError, ValueError, KeyError) as exc:
            _fail(f"{option} {value}: {exc}")
    if user is not None:
        try:
            os.setgroups([])
            os.setgid(user[1])
            os.setuid(user[0])
        except OSError as exc:
            _fail(f"--user {user[0]}:{user[1]}: {exc}")
        if os.getuid() != user[0] or os.geteuid() != user[0]:
            _fail(f"could not drop to uid {user[0]}")
    if bwrap_env:
        extra = ["--clearenv"]
        for name, value in env.items():
            extra += ["--setenv", name, value]
        argv = [argv[0], *extra, *argv[1:]]
        env = {}
    if supervise is not None:
        _supervise(argv, env, supervise)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        _fail(f"cannot run {argv[0]}: {exc}")


if __name__ == "__main__":
    main(sys.argv[1:])
