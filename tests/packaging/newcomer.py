"""The newcomer's machine for tests/packaging/test_newcomer.py: its venv and home, the
steps run there, the processes they started (found in /proc), ``lmc serve`` run as the
docs say, and the docs' examples.

A process is the newcomer's when its command line names the venv or the home, when it
carries the steps' environment mark, or when it is in the cgroup of a session of the
newcomer's server (a shell in a sandbox names neither). It is left behind when it lives
on after its owner: any of them while no server runs; with a server, one that does not
descend from it, or whose session's folder is gone (the session ended).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..docs.pages import ROOT, SERVER_TOKEN, SERVER_URL, Block, blocks
from ..lifeline import tie
from .test_wheel import Installed

#: The variable that marks every process the steps start (and their children).
MARK = "LMC_NEWCOMER_MARK"
#: Seconds a left-behind process may take to go once its owner ended.
EXIT_SECONDS = 30
#: Seconds one step may take (interpreters starting on a loaded machine included).
STEP_SECONDS = 180
_SESSION_CGROUP = re.compile(r"/lmc-([0-9a-f]{8,})-")
_LISTENING = re.compile(r"lmc serve: listening on (http://\S+)")


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    cmdline: str
    sessions: frozenset[str]  # the lmc serve sessions its cgroups name
    marked: bool

    def __str__(self) -> str:
        return f"{self.pid} (parent {self.ppid}): {self.cmdline[:300]}"


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:  # gone meanwhile, or a kernel thread
        return b""


def processes(mark: bytes) -> dict[int, Proc]:
    """Every process of the host, from /proc."""
    found: dict[int, Proc] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        base = f"/proc/{entry.name}"
        stat = _read(f"{base}/stat")
        if not stat:
            continue
        ppid = int(stat.rsplit(b")", 1)[1].split()[1])
        cgroups = _read(f"{base}/cgroup").decode(errors="replace")
        found[int(entry.name)] = Proc(
            pid=int(entry.name),
            ppid=ppid,
            cmdline=_read(f"{base}/cmdline").replace(b"\0", b" ").decode(errors="replace"),
            sessions=frozenset(_SESSION_CGROUP.findall(cgroups)),
            marked=mark in _read(f"{base}/environ").split(b"\0"),
        )
    return found


def _descends(pid: int, ancestor: int, procs: dict[int, Proc]) -> bool:
    seen = set()
    while pid in procs and pid not in seen and pid > 1:
        if pid == ancestor:
            return True
        seen.add(pid)
        pid = procs[pid].ppid
    return False


@dataclass
class Census:
    """The newcomer's processes: which are left behind, waited for with a deadline."""

    paths: tuple[str, ...]  # folders (with a trailing /) that name a process as ours
    mark: str  # MARK's value in the steps' environment
    data_dir: Path  # lmc serve's data directory: sessions/<id> while a session lives
    sessions_seen: set[str] = field(default_factory=set)

    def _live_sessions(self) -> set[str]:
        try:
            return set(os.listdir(self.data_dir / "sessions"))
        except FileNotFoundError:
            return set()

    def left_behind(self, server: int | None) -> list[Proc]:
        """Our processes that outlive their owner (``server``: the running server's pid)."""
        procs = processes(f"{MARK}={self.mark}".encode())
        live = self._live_sessions()
        ours = {
            p
            for p, proc in procs.items()
            if proc.marked or any(x in proc.cmdline for x in self.paths)
        }
        self.sessions_seen |= live | {s for p in ours for s in procs[p].sessions}
        ours |= {p for p, proc in procs.items() if proc.sessions & self.sessions_seen}
        ours -= {os.getpid(), server or 0}
        return [
            procs[p]
            for p in sorted(ours)
            if server is None or not _descends(p, server, procs) or not procs[p].sessions <= live
        ]

    def assert_none_left(self, step: str, server: int | None = None) -> None:
        """Wait (at most EXIT_SECONDS, watching /proc) until nothing of ours outlives its
        owner; else fail naming what stayed."""
        deadline = time.monotonic() + EXIT_SECONDS
        while left := self.left_behind(server):
            if time.monotonic() > deadline:
                names = "\n".join(map(str, left))
                raise AssertionError(
                    f"after {step}, still running {EXIT_SECONDS} s later:\n{names}"
                )
            time.sleep(0.1)

    def kill_left_behind(self) -> None:
        """End (by pid) whatever of ours a failed step left, so that the suite goes on clean."""
        for proc in self.left_behind(None):
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)


class Serve:
    """``lmc serve``, started as the docs say, its first line read as it comes."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
        self._log = log
        with open(log, "wb") as stderr:
            self.process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,  # its session ends with this process (tie)
            )
        tie(self.process)
        self.stdout: list[str] = []
        self._listening = threading.Event()
        self.url = ""
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode(errors="replace")
            self.stdout.append(line)
            if (match := _LISTENING.search(line)) and not self.url:
                self.url = match.group(1)
                self._listening.set()
        self._listening.set()  # it ended: stop waiting

    def log(self) -> str:
        return "".join(self.stdout) + self._log.read_text(errors="replace")[-6000:]

    def troubles(self) -> list[str]:
        """The lines of its log that report an error or a traceback."""
        lines = self._log.read_text(errors="replace").splitlines()
        return [line for line in lines if " ERROR " in line or line.startswith("Traceback")]

    def wait_listening(self, timeout: float) -> str:
        """The URL it printed once it listens (bounded)."""
        self._listening.wait(timeout)
        assert self.url, f"lmc serve did not say it listens in {timeout} s:\n{self.log()}"
        return self.url

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, as an operator stops it; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(10)
            self._reader.join(10)
        return status


def example(page: str, language: str, *needles: str) -> Block:
    """The one code block of ``page`` in ``language`` that holds every one of ``needles``."""
    found = [
        b
        for b in blocks(ROOT / page)
        if b.language == language and all(n in b.code for n in needles)
    ]
    assert len(found) == 1, f"{page}: {len(found)} {language} blocks hold {needles}"
    return found[0]


def shell_commands(code: str) -> list[str]:
    """The commands of a shell block: continued lines joined, blank and comment lines dropped."""
    lines = code.replace("\\\n", " ").splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def shell_script(commands: list[str], outputs: Path) -> str:
    """A bash script running ``commands`` in one shell (their variables kept), each one's
    stdout, stderr and status in ``outputs``/N.out, N.err, N.rc."""
    lines = ["set -u"]
    for n, command in enumerate(commands):
        # The closing brace on a line of its own: the command may end with a comment.
        lines.append(
            f"{{ {command}\n}} >{outputs}/{n}.out 2>{outputs}/{n}.err; echo $? >{outputs}/{n}.rc"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Server:
    serve: Serve
    url: str
    token: str

    def example(self, code: str) -> str:
        assert SERVER_URL in code and SERVER_TOKEN in code, code
        return code.replace(SERVER_URL, self.url).replace(SERVER_TOKEN, f"token={self.token!r}")


def said(done: subprocess.CompletedProcess[str]) -> str:
    return (
        f"status {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    )


@dataclass(frozen=True)
class Newcomer:
    installed: Installed  # the venv and a working folder outside the repository
    home: Path  # $HOME: fresh, short (lmc serve's data directory lives in it)
    mark: str
    census: Census

    def env(self, **extra: str) -> dict[str, str]:
        drop = ("PYTHONPATH", "VIRTUAL_ENV", "LMC_TOKEN", "XDG_DATA_HOME", "XDG_STATE_HOME")
        env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("LMC_")}
        env["PATH"] = f"{self.installed.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return {**env, "HOME": str(self.home), MARK: self.mark, **extra}

    def run(
        self, *argv: str, timeout: float = STEP_SECONDS, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """``argv`` run from the working folder, with the newcomer's environment (bounded).

        Its output goes to files, not pipes: a process it leaves behind holding them
        does not hold up the step, and the census names it instead."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                status = subprocess.run(
                    argv,
                    stdout=out,
                    stderr=err,
                    timeout=timeout,
                    check=False,
                    cwd=self.installed.outside,
                    env=self.env(**env),
                ).returncode
            except subprocess.TimeoutExpired:
                status = -signal.SIGKILL  # what subprocess.run did to it
            outputs = []
            for file in (out, err):
                file.seek(0)
                outputs.append(file.read().decode(errors="replace"))
        return subprocess.CompletedProcess(argv, status, *outputs)

    def python(
        self, code: str, timeout: float = STEP_SECONDS, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """``code`` run as a script file, as a newcomer runs an example they saved."""
        script = self.installed.outside / "example.py"
        script.write_text(code)
        return self.run("python", str(script), timeout=timeout, **env)

    def walk(self, server: Server, commands: list[str]) -> list[tuple[str, int, str, str]]:
        """Each command run by bash in one shell, in the newcomer's folder: (command, its
        status, its stdout, its stderr)."""
        assert shutil.which("curl") and shutil.which("jq"), "the walkthrough uses curl and jq"
        outputs = Path(tempfile.mkdtemp(dir=self.home))
        commands = [c.replace(SERVER_URL, server.url) for c in commands]
        script = shell_script(commands, outputs)
        done = self.run("bash", "-c", script, LMC_TOKEN=server.token)
        assert done.returncode == 0, said(done)
        return [
            (
                c,
                int((outputs / f"{n}.rc").read_text()),
                (outputs / f"{n}.out").read_text(),
                (outputs / f"{n}.err").read_text(),
            )
            for n, c in enumerate(commands)
        ]
