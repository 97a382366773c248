"""The code a kernel runs, gathered in the fork server (``_zygote.py``) before any
fork, so that running it copies fewer of the pages a kernel shares with it.

CPython 3.11 writes to a code object each time it runs it (its warm-up count,
then its specializations), so the first run of a function in a kernel copies
the page its code object is on. The code objects a module's import made lie
among its names, constants and every other code object of the module; a
kernel's start and first cell run some 950 functions of some 60 modules, and so
copied about 800 pages (3.2 MiB) that held their code.

:func:`learn` runs one kernel's start and first cell in a *probe*: a kernel
forked from this process (as root, outside any sandbox, in a folder of its own
that is its home and IPython folder, on unix sockets there), which notes every
code object that runs in any of its threads, and a client forked beside it,
which asks for ``print(1)`` and then tells the probe to send what it noted and
end. Both end with the fork server, and are killed past :data:`PROBE_BOUND`
seconds. ``_gather.py`` then gives each function whose code ran a copy of its
code object, the copies made together; ``_hotcache.py`` keeps the names of that
code for the next fork server of this installation, which then forks no probe.

The probe runs only the kernel's own start and ``print(1)``: no session's code,
environment or files. What it sends back is numbers (the ids of code objects in
this process's memory, which the probe shares), used only to choose which code
objects to copy. Anything that goes wrong leaves the code where it is: this is
an optimization only.

Stdlib only, besides what the kernel imports; imported by the fork server by
its file name.
"""

import contextlib
import json
import os
import select
import shutil
import signal
import stat
import sys
import tempfile
import time
import types
from collections.abc import Callable

__all__ = ["CELL", "PROBE_BOUND", "learn"]

#: Seconds the probe may take, kernel start and first cell together.
PROBE_BOUND = 20.0
#: The most code objects the probe may name (a kernel's start names about 1,000).
_MOST = 200_000
#: Seconds the probe needs at the least; with less time left it is not run.
_LEAST = 2.0
#: The probe's folder's name starts so, then its fork server's pid.
_PREFIX = "lmc-probe-"
_PR_SET_PDEATHSIG = 1
#: The cell the probe's client runs.
CELL = "print(1)"


def _die_with(parent: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the fork server ended before the line above
        os._exit(1)


def _only(*kept: int) -> None:
    """This process keeps no descriptor of the fork server's but ``kept`` (its
    control socket, its pipes), its stdio on /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    # The process's own streams, not what the warming redirected them to.
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    highest = max((3, null, *kept)) + 1
    for fd in range(3, highest):
        if fd not in kept:
            with contextlib.suppress(OSError):
                os.close(fd)
    os.closerange(highest, os.sysconf("SC_OPEN_MAX"))


def _probe(script: str, argv: list[str], tell: int, run: Callable[[str], None]) -> None:
    """In the probe: note every code object that runs, in every thread, until the
    client's SIGUSR1; then write their ids on ``tell`` and end."""
    import threading

    ran: set[int] = set()

    def note(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call":
            ran.add(id(frame.f_code))

    def told(*_: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        data = "\n".join(map(str, ran)).encode()
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(tell, data[: 1 << 16]) :]
        os._exit(0)

    signal.signal(signal.SIGUSR1, told)
    sys.argv = [script, *argv]
    sys.path.insert(0, os.path.dirname(script))  # as a forked kernel runs it
    threading.setprofile(note)
    sys.setprofile(note)
    run(script)


def _client(connection_file: str, probe: int) -> None:
    """Beside the probe: its first cell, asked for as the runtime asks for a run
    (``lmc_runtime/backends/jupyter/kernel.py``: its lines tracked), then SIGUSR1
    to the probe once the cell's reply and the kernel's idle status came."""
    from jupyter_client.blocking.client import BlockingKernelClient

    client = BlockingKernelClient()
    client.load_connection_file(connection_file)
    client.start_channels()
    client.wait_for_ready(timeout=PROBE_BOUND)
    content = {
        "code": CELL,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }
    request = client.session.msg("execute_request", content, metadata={"lmc_active_line": True})
    client.shell_channel.send(request)
    asked = request["header"]["msg_id"]
    deadline = time.monotonic() + PROBE_BOUND

    def left() -> float:
        return max(deadline - time.monotonic(), 0.001)  # past it: queue.Empty

    while client.get_shell_msg(timeout=left())["parent_header"].get("msg_id") != asked:
        pass
    while True:
        message = client.get_iopub_msg(timeout=left())
        state = message["content"].get("execution_state")
        if message["parent_header"].get("msg_id") == asked and state == "idle":
            break
    os.kill(probe, signal.SIGUSR1)


def _forked(work: Callable[[], None]) -> int:
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            _die_with(parent)
            work()
        except BaseException:  # a child of the fork server: nothing may escape it
            code = 1
        os._exit(code)
    return pid


def _read(fd: int, deadline: float) -> bytes | None:
    """What the probe writes on ``fd`` until it closes it, or None past ``deadline``."""
    data = bytearray()
    polled = select.poll()
    polled.register(fd, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not polled.poll(left * 1000):
            return None
        piece = os.read(fd, 1 << 16)
        if not piece:
            return bytes(data)
        data += piece
        if len(data) > _MOST * 21:
            return None


def _swept(parent: str) -> None:
    """Remove the folders in ``parent`` of probes whose fork server ended (killed
    while its probe ran): this process's own, named by their fork server's pid."""
    me = os.geteuid()
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            owner = entry.name.removeprefix(_PREFIX).partition("-")[0]
            if not (entry.name.startswith(_PREFIX) and owner.isdigit()):
                continue
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != me or _alive(int(owner)):
                continue
            shutil.rmtree(entry.path, ignore_errors=True)  # never follows a link in it


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def learn(
    script: str, argv: list[str], run: Callable[[str], None], deadline: float | None = None
) -> set[int]:
    """The ids of the code objects a kernel ran (``python SCRIPT ARGV``, run by
    ``run(script)`` as a forked kernel runs it, ``{connection_file}`` in ``argv`` the
    probe's) until its first cell's reply; empty if that could not be found by
    ``deadline`` (``time.monotonic()``; at most :data:`PROBE_BOUND` from now)."""
    bound = time.monotonic() + PROBE_BOUND
    deadline = bound if deadline is None else min(deadline, bound)
    if deadline - time.monotonic() < _LEAST:
        return set()
    parent = tempfile.gettempdir()
    _swept(parent)
    folder = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=parent)
    pids: list[int] = []
    read_end, write_end = os.pipe()
    try:
        connection_file = os.path.join(folder, "kernel.json")
        with open(connection_file, "w", encoding="utf-8") as file:
            json.dump(_connection(folder), file)
        args = [a.replace("{connection_file}", connection_file) for a in argv]
        env = {"HOME": folder, "IPYTHONDIR": os.path.join(folder, "ipython")}
        env.update({f"JUPYTER_{k}_DIR": os.path.join(folder, k.lower()) for k in _JUPYTER})

        def probe() -> None:
            _only(write_end)
            os.environ.update(env)
            os.chdir(folder)
            _probe(script, args, write_end, run)

        def client() -> None:
            _only()
            try:
                _client(connection_file, pids[0])
            except BaseException:
                os.kill(pids[0], signal.SIGKILL)  # so that the fork server waits no more
                raise

        pids.append(_forked(probe))
        os.close(write_end)
        write_end = -1
        pids.append(_forked(client))
        data = _read(read_end, deadline)
    finally:
        # The client first: it signals the probe, whose pid must not be freed
        # (reaped) while the client may still send to it.
        for pid in reversed(pids):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
    if not data:
        return set()
    ids = data.split(b"\n")
    return {int(i) for i in ids[:_MOST] if i.isdigit()}


#: The folders of Jupyter's own the probe gets in its folder.
_JUPYTER = ("CONFIG", "DATA", "RUNTIME")


def _connection(folder: str) -> dict[str, object]:
    """A connection file on unix sockets in ``folder``, with a key of its own."""
    import secrets

    names = ("shell", "iopub", "stdin", "control", "hb")
    ports = {f"{name}_port": n for n, name in enumerate(names, 1)}
    return {
        **ports,
        "ip": os.path.join(folder, "k"),
        "transport": "ipc",
        "key": secrets.token_hex(16),
        "signature_scheme": "hmac-sha256",
        "kernel_name": "",
    }
