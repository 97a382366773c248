"""How the host hands a sandboxed process its environment and its seccomp filter.

A session's own variables (the client's) are carried to the sandbox under
:data:`SET_PREFIX` names (``LMC_SANDBOX_SET_PYTHONPATH``): no process on the
host, where the dynamic loader and interpreters read variables at start-up
before anything drops privileges, ever has one as the variable it names. The
step that starts the sandboxed program itself, inside the sandbox and after
every privilege is dropped, gives them their names (:func:`session_variables`).

From the host wrapper on, the whole environment travels in a memory file whose
descriptor is named by :data:`ENV_FD` (:func:`env_fd`, :func:`received`), never
on a command line (``bwrap --setenv NAME VALUE``), which any host user reads in
``/proc``. bwrap's own options (the host folders it binds) travel the same way
(:func:`bwrap_options_fd`): bwrap is the sandbox's first process, whose
command line the code reads in ``/proc/1/cmdline``.

Stdlib only: the exec wrapper (``python -I -S``) and the fork server load it by
its file name.
"""

import os

# Not ``typing`` (see _exec.py): type checkers read this block; Python never runs it.
TYPE_CHECKING = False
if TYPE_CHECKING or __package__:
    from . import _seccomp
else:  # loaded by its file name, from this folder (see _exec.py's _sibling)
    import _seccomp

__all__ = [
    "ARGS_FD",
    "ENV_FD",
    "SECCOMP_FD",
    "SET_PREFIX",
    "bwrap_options_fd",
    "env_fd",
    "received",
    "seccomp_fd",
    "session_variables",
]

#: Where the descriptor holding the environment is named.
ENV_FD = "LMC_SANDBOX_ENV_FD"
#: Where the network helper finds the descriptor holding the seccomp filter.
SECCOMP_FD = "LMC_SANDBOX_SECCOMP_FD"
#: Where the network helper finds the descriptor holding bwrap's options.
ARGS_FD = "LMC_SANDBOX_ARGS_FD"
#: The prefix a session's own variable travels under until it is inside.
SET_PREFIX = "LMC_SANDBOX_SET_"
#: Variables of the runtime's own, which a session's variable never replaces.
_RUNTIME_PREFIX = "LMC_"


def session_variables(env: dict[str, str]) -> dict[str, str]:
    """``env`` with each carried variable under its own name (replacing what the
    host set, except the runtime's own ``LMC_`` variables)."""
    for carried in [name for name in env if name.startswith(SET_PREFIX)]:
        value = env.pop(carried)
        name = carried[len(SET_PREFIX) :]
        if name and not (name.startswith(_RUNTIME_PREFIX) and name in env):
            env[name] = value
    return env


def _memory_file(name: str, data: bytes) -> int:
    """An inheritable descriptor of a memory file holding ``data``, at its start."""
    fd = os.memfd_create(name, 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    return fd


def env_fd(env: dict[str, str]) -> int:
    """A descriptor holding ``env`` (``NAME=VALUE``, NUL-separated)."""
    entries = [f"{name}={value}".encode("utf-8", "surrogateescape") for name, value in env.items()]
    return _memory_file("lmc-env", b"\0".join(entries))


def received(env: dict[str, str]) -> dict[str, str]:
    """The environment the descriptor named in ``env`` holds (it is closed), or
    ``env`` itself when it names none."""
    number = env.get(ENV_FD)
    if number is None:
        return env
    fd = int(number)
    chunks = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    os.close(fd)
    result = {}
    for entry in b"".join(chunks).split(b"\0"):
        name, sep, value = entry.decode("utf-8", "surrogateescape").partition("=")
        if sep and name:
            result[name] = value
    return result


def bwrap_options_fd(argv: list[str]) -> tuple[list[str], int | None]:
    """bwrap's command line ``argv`` (``bwrap OPTIONS -- COMMAND``) with its
    options in a memory file, read by bwrap's ``--args FD``; and that descriptor
    (None, and ``argv`` as it is, without ``--``)."""
    if "--" not in argv[1:]:
        return argv, None
    split = argv.index("--", 1)
    data = b"".join(option.encode("utf-8", "surrogateescape") + b"\0" for option in argv[1:split])
    fd = _memory_file("lmc-bwrap-args", data)
    return [argv[0], "--args", str(fd), *argv[split:]], fd


def seccomp_fd() -> int:
    """A descriptor holding the sandbox's seccomp filter, for bwrap's ``--seccomp``."""
    return _memory_file("lmc-seccomp", _seccomp.program())
