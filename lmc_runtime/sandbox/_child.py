"""The kernel's side of a fork: the part of the fork server (``_zygote.py``)
that runs in each kernel, from the moment it is forked.

The fork server forks the process straight into the session's PID namespace
(``setns`` on a pidfd of the *holder*, a process already in the session's
sandbox, and back once forked: :mod:`._kernels`), so a kernel takes one fork of
the fork server and no other process. The process, on the host and root still,
reads the request (command line, environment, working directory, the
session's cgroups and rlimits, and as descriptors the kernel's stdout and
stderr), drops its supplementary groups, joins the cgroups, sets the rlimits
and enters the holder's other namespaces at once (``setns`` on the pidfd). It
then names itself to the fork server (on a pipe) and to the runtime (its pid
and a pidfd of it). The fork server reports how it ended, and kills it if the
runtime's end closes first.

Until it enters them, the process is in the sandbox's PID namespace and the
host's others: ``/proc/PID/mountinfo`` would show the host's mounts to code
in that namespace. There is none: each kernel is forked into a holder started
for it (:meth:`~.launch.SandboxLauncher.fork`), whose namespace holds only
bwrap and the holder's ``sleep``, and the window is a read, a few calls and a
``setns``. What the fork allocated (the page tables, the kernel stack) stays
charged to the fork server's cgroup; what the kernel allocates after, to the
session's, which it joins first.

The kernel becomes the sandbox's user, drops every capability (the bounding
and ambient sets too), sets ``no_new_privs`` as bubblewrap does, takes an
empty session keyring of its own and puts itself under the sandbox's seccomp
filter (:mod:`._seccomp`, as bwrap does for what it starts), checks all of it
in ``/proc/self/status`` (else it ends at once), starts a session of its own,
keeps no descriptor but its stdio, and runs ``python SCRIPT ARGS`` as
``runpy.run_path`` would, from the code the fork server compiled of SCRIPT
when it has (:mod:`._warm`).

Stdlib only (``ctypes`` for ``setns``, ``capset``, ``prctl``): the fork server
imports it by its file name (it runs as a script), and every kernel is forked
with it in memory.
"""

import contextlib
import ctypes
import json
import os
import resource
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING or __package__:
    from . import _handoff, _seccomp
else:  # imported by the fork server, run as a script, from this file's folder
    import _handoff
    import _seccomp

__all__ = ["MAX_REQUEST", "NAMESPACES", "start"]

#: The largest request read.
MAX_REQUEST = 1 << 17

#: Every namespace a holder may have of its own.
NAMESPACES = (
    0x10000000  # CLONE_NEWUSER
    | 0x00020000  # CLONE_NEWNS
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
    | 0x08000000  # CLONE_NEWIPC
    | 0x04000000  # CLONE_NEWUTS
    | 0x02000000  # CLONE_NEWCGROUP
)
#: The PID namespace: the fork server forks the process into it.
CLONE_NEWPID = 0x20000000
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def _fail(text: str) -> NoReturn:
    with contextlib.suppress(OSError):
        os.write(2, f"lmc fork server: {text}\n".encode("utf-8", "replace"))
    os._exit(126)


# -- the kernel -------------------------------------------------------------


def _drop_privileges(uid: int, gid: int) -> None:
    """Become ``uid``:``gid`` of the current user namespace with no capability at all."""
    libc = _libc()
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    for cap in range(64):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails past the last cap: fine
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset")
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")


def _verify(uid: int, gid: int) -> None:
    """End at once unless /proc/self/status shows the ids and no capability."""
    with open("/proc/self/status", encoding="ascii", errors="replace") as status:
        fields = dict(line.rstrip("\n").split(":\t", 1) for line in status if ":\t" in line)
    wanted = {
        "Uid": "\t".join([str(uid)] * 4),
        "Gid": "\t".join([str(gid)] * 4),
        "Groups": "",
        "NoNewPrivs": "1",
        "Seccomp": "2",
    }
    for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        wanted[name] = "0" * 16
    for name, value in wanted.items():
        if fields.get(name, "").strip() != value:
            _fail(f"privileges not dropped: {name} is {fields.get(name)!r}")


def _stdio(stdout: int, stderr: int) -> None:
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(stdout, 1)
    os.dup2(stderr, 2)
    kept = {0, 1, 2}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in kept:
            with contextlib.suppress(OSError):
                os.close(fd)


def _python_environment(script: str, env: dict[str, str]) -> None:
    """What ``python SCRIPT`` would have started with under ``env``."""
    import site

    os.environ.clear()
    os.environ.update(env)
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:0] = [os.path.dirname(os.path.abspath(script)), *extra]
    site.USER_BASE = None
    site.USER_SITE = None
    user_site = site.getusersitepackages()
    if site.ENABLE_USER_SITE and os.path.isdir(user_site):
        site.addsitedir(user_site)


def _kernel(request: dict[str, Any], stdout: int, stderr: int) -> NoReturn:
    os.dup2(stderr, 2)  # from here on, what goes wrong is in the kernel's log
    try:
        uid, gid = int(request["uid"]), int(request["gid"])
        _drop_privileges(uid, gid)
        _seccomp.new_session_keyring()
        _seccomp.install(_seccomp.program())
        _verify(uid, gid)  # here, in the sandbox's PID namespace, /proc/self is this process
        os.setsid()
        _stdio(stdout, stderr)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python starts
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        argv = [str(a) for a in request["argv"]]
        env = {str(k): str(v) for k, v in request["env"].items()}
        _handoff.session_variables(env)  # the session's own, by their names at last
        env["PWD"] = str(request["cwd"])  # as bwrap sets it
        _python_environment(argv[1], env)
        sys.argv = argv[1:]
    except (OSError, KeyError, TypeError, ValueError, IndexError) as exc:
        _fail(f"the kernel could not be set up: {exc}")
    code = 0
    try:
        _run_script(argv[1])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # as the interpreter would: the traceback, then status 1
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code & 0xFF)


def _run_script(path: str) -> None:
    """``runpy.run_path(path, run_name="__main__")``, from the fork server's compiled
    code of ``path`` if the file still has the source it was compiled from."""
    import types

    precompiled = getattr(sys.modules.get("_lmc_precompiled"), "code", None)
    source, code = (
        precompiled.get(path, (None, None)) if isinstance(precompiled, dict) else (None, None)
    )
    if code is not None:
        try:
            with open(path, "rb") as file:
                code = code if file.read() == source else None
        except OSError:
            code = None  # runpy says why
    if code is None:
        import runpy

        runpy.run_path(path, run_name="__main__")
        return
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __loader__=None, __spec__=None)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


# -- the process, forked into the sandbox's PID namespace ---------------------


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 8)
    if len(fds) != 2:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"a request comes with two descriptors, not {len(fds)}")
    request = json.loads(data)
    if not isinstance(request, dict):
        raise ValueError("a request is a JSON object")
    return request, fds


def _enter(request: dict[str, Any], holder: int) -> None:
    """On the host: the session's groups, cgroups and rlimits; then the holder's
    namespaces but its PID namespace, which this process was born in."""
    os.setgroups([])
    for procs in request.get("cgroups", []):
        with open(procs, "w", encoding="ascii") as file:
            file.write(str(os.getpid()))  # read in this process's PID namespace
    for number, value in request.get("rlimits", {}).items():  # RLIMIT_* numbers
        resource.setrlimit(int(number), (int(value), int(value)))
    _check(_libc().setns(holder, NAMESPACES & ~CLONE_NEWPID), "setns")
    os.close(holder)


def _send(conn: socket.socket, data: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
    socket.send_fds(conn, [json.dumps(data).encode()], list(fds))


def start(conn: socket.socket, tell: int, holder: int) -> NoReturn:
    """Become the kernel ``conn`` asks for (see the module's docstring), once
    named to the fork server on the pipe ``tell`` and to the runtime on ``conn``."""
    try:
        # The host's pid: the host's /proc still, whose "self" is read in the host's
        # PID namespace (os.getpid() answers in the sandbox's).
        pid = int(os.readlink("/proc/self"))
        request, (stdout, stderr) = _receive(conn)
        _enter(request, holder)
        os.write(tell, b"%d\n" % pid)  # first: the fork server then reports its end
        _send(conn, {"pid": pid}, (os.pidfd_open(os.getpid()),))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        with contextlib.suppress(OSError):
            _send(conn, {"error": str(exc)})
        _fail(f"the kernel could not be forked: {exc}")
    conn.close()
    _kernel(request, stdout, stderr)  # keeps no descriptor but its stdio
