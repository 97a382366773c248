"""How a command of E2B's ``process.Process`` service is started: inside its
sandbox's session sandbox, through the session's launcher, as any of its
interpreters is (its cgroup and limits, its user, its network policy, a bwrap
of its own), with the session's environment, the command's own variables, and
its working directory entered inside, as the sandbox's user.

A command's variables travel as the session's own do (under
:data:`~lmc_runtime.sandbox._handoff.SET_PREFIX` names, named only inside), and
are checked as the lmc API checks them: no variable that configures the dynamic
loader. The sandbox has one user, ``user``: a command asked to run as anyone
else (``root``) is refused, never run as someone it was not asked to be.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import struct
import subprocess
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ...sandbox._handoff import SET_PREFIX
from ...sandbox.launch import SandboxLauncher
from ...sandbox.sandbox import Sandbox
from ...sandbox.view import SANDBOX_HOME, SANDBOX_USER, SandboxView
from ...service.models import checked_env

__all__ = ["Launch", "LaunchRefused", "Spawned", "command_line", "commands_launcher", "spawn"]

#: The most variables one command may set, and the longest command line.
MAX_ENVS = 256
MAX_ARGV_BYTES = 128 * 1024
#: The folder of the session's disk the commands share as ``/tmp``.
_TMP_FOLDER = "commands-tmp"
#: What a terminal program expects to find (E2B's PTYs say the same).
_PTY_ENV = {"TERM": "xterm-256color", "LANG": "C.UTF-8"}


class LaunchRefused(ValueError):
    """What the command asks for cannot be granted (its message says why)."""


@dataclass(frozen=True)
class Launch:
    """One command as asked for: ``cmd`` and ``args``, the variables it adds,
    where it starts (None: the home), its terminal size (None: pipes)."""

    cmd: str
    args: tuple[str, ...] = ()
    envs: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    #: (columns, rows) of its terminal; None: separate stdout and stderr pipes.
    pty: tuple[int, int] | None = None
    #: Whether its stdin is a pipe the client writes (else it reads /dev/null).
    stdin: bool = False

    def checked(self) -> Launch:
        """This launch if it can run; :class:`LaunchRefused` saying why not."""
        if not self.cmd or "\0" in self.cmd or any("\0" in arg for arg in self.args):
            raise LaunchRefused("the command is empty or holds a NUL character")
        if sum(len(part.encode()) + 1 for part in (self.cmd, *self.args)) > MAX_ARGV_BYTES:
            raise LaunchRefused(f"the command line is longer than {MAX_ARGV_BYTES} bytes")
        if len(self.envs) > MAX_ENVS:
            raise LaunchRefused(f"envs: at most {MAX_ENVS} variables")
        try:
            checked_env(dict(self.envs))
        except ValueError as exc:
            raise LaunchRefused(f"envs: {exc}") from None
        if self.cwd is not None and "\0" in self.cwd:
            raise LaunchRefused("cwd holds a NUL character")
        return self


def check_user(user: str | None) -> None:
    """Refuse any user but the sandbox's own (None: the default, its own)."""
    if user not in (None, "", SANDBOX_USER):
        raise LaunchRefused(
            f"this sandbox has one user, {SANDBOX_USER!r}: a command cannot run as {user!r}"
        )


def inside_cwd(cwd: str | None) -> str:
    """Where the command starts, as the sandbox sees it (relative: from the home)."""
    if not cwd:
        return SANDBOX_HOME
    return os.path.normpath(PurePosixPath(SANDBOX_HOME, cwd))


def session_env(sandbox: Sandbox, launch: Launch) -> dict[str, str]:
    """The session's environment (its own variables, E2B's ``envVars`` among
    them) with the command's variables added, carried as the session's are."""
    env = sandbox.code_env()
    env.setdefault(SET_PREFIX + "USER", SANDBOX_USER)
    env.setdefault(SET_PREFIX + "LOGNAME", SANDBOX_USER)
    if launch.pty is not None:
        env.update((SET_PREFIX + name, value) for name, value in _PTY_ENV.items())
    env.update((SET_PREFIX + name, value) for name, value in launch.envs.items())
    return env


def _host_cwd(sandbox: Sandbox, cwd: str) -> Path:
    """The launcher's ``cwd`` for a command that starts in ``cwd`` (inside)."""
    if sandbox.enabled:  # entered inside the sandbox, as its user (``_exec.py --chdir``)
        return Path(cwd)
    # Without bubblewrap the home is the working directory itself, on the host.
    home = PurePosixPath(SANDBOX_HOME)
    path = PurePosixPath(cwd)
    if path != home and home not in path.parents:
        raise LaunchRefused(f"cwd must be inside {SANDBOX_HOME} on this server")
    return sandbox.work_dir / path.relative_to(home)


@dataclass
class Spawned:
    """A started command: the wrapper process (its own process group), and the
    host's ends of its streams (-1 where there is none)."""

    process: subprocess.Popen[bytes]
    stdin: int
    stdout: int
    stderr: int
    #: The terminal's master end (its output and input) for a PTY command.
    pty: int = -1

    def descriptors(self) -> list[int]:
        return [fd for fd in (self.stdin, self.stdout, self.stderr, self.pty) if fd >= 0]


@dataclass(frozen=True)
class _SharedTmpView(SandboxView):
    """The sandbox's view with one folder of the session's disk as ``/tmp``."""

    tmp: Path | None = None

    def bwrap_options(self) -> list[str]:
        options = super().bwrap_options()
        return [*options, "--bind", str(self.tmp), "/tmp"] if self.tmp is not None else options


def commands_launcher(sandbox: Sandbox) -> SandboxLauncher:
    """The launcher of a sandbox's commands: the session's, with one ``/tmp`` that
    every command shares (as a machine's is), a folder of the session's disk (its
    limit counts it), where each process of the session otherwise has a memory
    folder of its own. Blocking (it makes the folder): run it in a worker thread.

    The folder is made by the host in the disk's top folder, which only the host
    writes (so no link the code plants is followed), and given to the session's
    user. Where a host folder the sandbox reads lives under ``/tmp`` (a checkout
    there), the commands keep private ``/tmp`` folders, which leave it visible."""
    launcher = sandbox.launcher
    view = launcher.view
    under_tmp = any(Path("/tmp") in (path, *path.parents) for path in launcher.readonly)
    if view is None or launcher.bwrap is None or under_tmp:
        return launcher
    tmp = sandbox.work_dir.parent / _TMP_FOLDER
    with contextlib.suppress(FileExistsError):
        os.mkdir(tmp, 0o700)
    if not os.path.isdir(tmp) or os.path.islink(tmp):
        return launcher
    owner = sandbox.owner
    if owner is not None:
        os.chown(tmp, *owner, follow_symlinks=False)
    shared = _SharedTmpView(**{f.name: getattr(view, f.name) for f in dataclasses.fields(view)})
    return dataclasses.replace(launcher, view=dataclasses.replace(shared, tmp=tmp))


def command_line(sandbox: Sandbox, launcher: SandboxLauncher, launch: Launch) -> list[str]:
    """The host's command line that runs ``launch`` in ``sandbox`` with ``launcher``."""
    cwd = _host_cwd(sandbox, inside_cwd(launch.cwd))
    return dataclasses.replace(launcher, cwd=cwd).wrap([launch.cmd, *launch.args])


def set_size(fd: int, columns: int, rows: int) -> None:
    """Give the terminal ``fd`` this size (its programs get SIGWINCH)."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


def _take_terminal() -> None:
    """In the child, a session leader already: its stdin, the terminal, becomes its
    controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def spawn(argv: Sequence[str], env: Mapping[str, str], launch: Launch) -> Spawned:
    """Start ``argv`` in a session of its own (blocking: run it in a worker thread)."""
    if launch.pty is not None:
        return _spawn_pty(argv, env, launch.pty)
    stdin = subprocess.PIPE if launch.stdin else subprocess.DEVNULL
    process = subprocess.Popen(
        list(argv),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd="/",
        start_new_session=True,
    )
    ends = [process.stdin, process.stdout, process.stderr]
    fds = [os.dup(end.fileno()) if end is not None else -1 for end in ends]
    for end in ends:
        if end is not None:
            end.close()
    for fd in fds:
        if fd >= 0:
            os.set_blocking(fd, False)
    return Spawned(process, *fds)


def _spawn_pty(argv: Sequence[str], env: Mapping[str, str], size: tuple[int, int]) -> Spawned:
    master, slave = os.openpty()
    try:
        set_size(master, *size)
        process = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=dict(env),
            cwd="/",
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
    except BaseException:
        os.close(master)
        raise
    finally:
        with contextlib.suppress(OSError):
            os.close(slave)
    os.set_blocking(master, False)
    return Spawned(process, -1, -1, -1, pty=master)
