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
``--stdin FIFO``
    open FIFO for reading (without waiting for a writer) as the stdin of
    ``argv``, once in DIR: inside the sandbox, so that its name in ``/proc`` is
    the sandbox's path.
``--bwrap-env``
    ``argv`` is a bwrap command line: hand the environment to the wrapper
    inside through a descriptor (``_handoff.py``), start bwrap with no other
    variable, and put the sandbox under the seccomp filter of ``_seccomp.py``
    (``--seccomp FD``). bwrap's options travel in a descriptor too (``--args
    FD``): its command line is the sandbox's PID 1's, which the code reads.
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
    the sandboxed process ended (same exit code, or same signal).
``--die-with-parent PID``
    in place of ``--supervise``, for a parent with one thread (the fork server,
    which starts a forked kernel's holder): become ``argv``, asking first to be
    killed when that thread ends (``PR_SET_PDEATHSIG``, asked last, as a change
    of user clears it; ``execve`` keeps it); refuse to start if PID is no longer
    this process's parent. bwrap's own ``--die-with-parent`` asks the same.
``--report``
    inside the sandbox: stay as the parent of ``argv`` too, and write how it
    ended (its wait status) to the descriptor the supervisor passed down.

With ``--supervise`` alone, ``argv`` is the network helper (``_netns.py``),
which starts bwrap: it is handed the same two descriptors, named in its
environment. Both are written before the file size limit (``--rlimit
fsize``) applies, which would cap them.

The wrapper that starts a command other than bwrap (without ``--bwrap-env``
or ``--supervise``: inside the sandbox, or the only one when there is none) takes
the environment from the descriptor it was handed, if any, and gives the
session's own variables their names (see ``_handoff.py``).

On the host (every run but ``--report``'s, which is inside the sandbox), once
dropped to ``--user``, it takes an empty session keyring of its own for
``argv`` and all it starts, in place of the server's (where the operator's keys
are: systemd and ``pam_keyinit`` give services and logins one).

How a supervised process ends, and how the wrapper inside reports it: see
``_ending.py``.
"""

from __future__ import annotations

import os
import resource
import sys

# Not ``typing`` nor ``contextlib``: importing them took a third of this
# wrapper's start (5.5 of 18 ms of CPU), paid by every sandboxed process, so
# errors are suppressed with try/except (see _ending.py's noqa). Nor ``signal``,
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


def _own_keyring() -> None:
    try:
        _sibling("_seccomp").new_session_keyring()
    except OSError as exc:
        _fail(str(exc))


if TYPE_CHECKING or __package__:
    from . import _ending
else:
    _ending = _sibling("_ending")
#: Where the sandboxed wrapper finds the descriptor it reports its child's end on.
STATUS_FD = _ending.STATUS_FD
exit_like = _ending.exit_like


class _Settings:
    """What the options ask for beyond what :func:`_apply` does at once."""

    def __init__(self) -> None:
        self.env = dict(os.environ)
        self.bwrap_env = self.report = False
        self.supervise: int | None = None
        #: The runtime process that must still be the parent (``--die-with-parent``).
        self.die_with: int | None = None
        self.user: tuple[int, int] | None = None
        self.sigint: Any = None
        self.chdir: str | None = None
        self.stdin: str | None = None
        #: Set once the handoff's memory files are written, which it would cap.
        self.fsize: int | None = None


def _apply(option: str, value: str, settings: _Settings) -> None:
    """Apply one option that takes a value (a cgroup, a limit), or note it."""
    if option == "--cgroup":
        with open(value, "w", encoding="ascii") as procs:
            procs.write(str(os.getpid()))
    elif option == "--rlimit":
        name, _, number = value.partition("=")
        limit = int(number)
        if name == "fsize":
            settings.fsize = limit
        else:
            resource.setrlimit(RLIMITS[name], (limit, limit))
    elif option == "--sigint":
        settings.sigint = signal.SIG_IGN if value == "ignore" else signal.SIG_DFL
    elif option == "--supervise":
        settings.supervise = int(value)
    elif option == "--die-with-parent":
        settings.die_with = int(value)
    elif option == "--user":
        uid, _, gid = value.partition(":")
        settings.user = (int(uid), int(gid))
    elif option == "--unset":
        settings.env.pop(value, None)
    elif option == "--chdir":
        settings.chdir = value
    elif option == "--stdin":
        settings.stdin = value
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


def _open_stdin(path: str) -> None:
    """``path`` (a FIFO) as descriptor 0: opened without waiting for a writer,
    then blocking, as any stdin."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        os.set_blocking(fd, True)
        os.dup2(fd, 0)
        os.close(fd)
    except OSError as exc:
        _fail(f"--stdin {path}: {exc}")


def _hide_bwrap_options(argv: list[str], bwrap_env: bool, env: dict[str, str]) -> list[str]:
    """``argv`` with bwrap's options in a descriptor (see ``--bwrap-env``), now
    named in ``env``: bwrap's command line is ``argv`` itself, or (the network
    helper's) follows its ``--``."""
    handoff = _sibling("_handoff")
    start = 0 if bwrap_env or "--" not in argv else argv.index("--") + 1
    bwrap, fd = handoff.bwrap_options_fd(argv[start:])
    if fd is not None:
        env[handoff.ARGS_FD] = str(fd)
    return [*argv[:start], *bwrap]


def main(args: list[str]) -> None:
    if "--" not in args:
        _fail("usage: _exec.py [options] -- argv")
    split = args.index("--")
    options, argv = args[:split], args[split + 1 :]
    if not argv:
        _fail("no command given")
    settings = _parse(options)
    if settings.supervise is not None and settings.die_with is not None:
        _fail("--supervise and --die-with-parent exclude each other")
    handoff = _sibling("_handoff")
    env = handoff.received(settings.env)
    if settings.user is not None:
        _drop_to(settings.user)
    if not settings.report:  # on the host (inside, the seccomp filter refuses keyrings)
        _own_keyring()
    if not settings.bwrap_env and settings.supervise is None:  # it starts argv itself
        handoff.session_variables(env)
    if settings.chdir is not None:
        try:
            os.chdir(settings.chdir)
        except OSError as exc:
            _fail(f"--chdir {settings.chdir}: {exc}")
        env["PWD"] = settings.chdir
    if settings.stdin is not None:
        _open_stdin(settings.stdin)
    if settings.report and STATUS_FD in env:
        _ending.report(argv, env, settings.sigint)
    if settings.sigint is not None:
        signal.signal(signal.SIGINT, settings.sigint)
    pipe = _ending.status_pipe(env) if settings.supervise is not None else None
    handed: list[int] = []
    if settings.bwrap_env or settings.supervise is not None:  # bwrap, or the network helper
        handed += [handoff.seccomp_fd(), handoff.env_fd(env)]
        env = {handoff.ENV_FD: str(handed[1])}
        argv = _hide_bwrap_options(argv, settings.bwrap_env, env)
        if handoff.ARGS_FD in env:
            handed.append(int(env[handoff.ARGS_FD]))
            if settings.bwrap_env:  # bwrap itself reads it: named on its command line
                del env[handoff.ARGS_FD]
        if settings.bwrap_env:
            argv = [argv[0], "--seccomp", str(handed[0]), *argv[1:]]
        else:  # the helper starts bwrap (see _netns.py); written here, under no size limit
            env[handoff.SECCOMP_FD] = str(handed[0])
    if settings.fsize is not None:
        try:
            resource.setrlimit(resource.RLIMIT_FSIZE, (settings.fsize, settings.fsize))
        except (OSError, ValueError) as exc:
            _fail(f"--rlimit fsize={settings.fsize}: {exc}")
    if settings.supervise is not None and pipe is not None:
        _ending.supervise(argv, env, settings.supervise, settings.sigint, (*pipe, *handed))
    if settings.die_with is not None:
        _ending.die_with_parent(settings.die_with)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        _fail(f"cannot run {argv[0]}: {exc}")


if __name__ == "__main__":
    main(sys.argv[1:])
