"""A real terminal for the REPL: tmux on its own socket."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EXIT_MARK = "[repl exited"


class Terminal:
    """``lmc repl`` running in a 120x40 tmux pane."""

    def __init__(self, tmp_path: Path) -> None:
        self.socket = f"lmc-repl-test-{uuid.uuid4().hex[:12]}"
        self.tag = uuid.uuid4().hex
        self.state = tmp_path / "state"
        self.cwd = tmp_path
        self.socket_path: Path | None = None

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return done.stdout

    def start(self, *repl_args: str, env: dict[str, str] | None = None) -> None:
        variables = {"LMC_STATE_DIR": str(self.state), "LMC_REPL_TEST_TAG": self.tag, **(env or {})}
        command = " ".join(
            [
                "env",
                *(shlex.quote(f"{k}={v}") for k, v in variables.items()),
                shlex.quote(sys.executable),
                "-m",
                "lmc_runtime",
                "repl",
                *map(shlex.quote, repl_args),
                f'; echo "{EXIT_MARK} $?]"; exec sleep 600',
            ]
        )
        self.tmux(
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "-s",
            "repl",
            "-c",
            str(self.cwd),
            "bash",
            "--norc",
            "--noprofile",
            "-c",
            command,
        )
        self.socket_path = Path(self.tmux("display-message", "-p", "#{socket_path}").strip())
        self.wait_for("Ctrl-D exits")

    def type(self, text: str) -> None:
        """Type ``text`` literally (no Enter)."""
        self.tmux("send-keys", "-t", "repl", "-l", text)

    def keys(self, *keys: str) -> None:
        """Press named keys: Enter, C-c, C-d..."""
        self.tmux("send-keys", "-t", "repl", *keys)

    def line(self, text: str) -> None:
        """Type a line and press Enter."""
        self.type(text)
        self.keys("Enter")

    def screen(self, escapes: bool = False) -> str:
        args = ["capture-pane", "-p", "-J", "-S", "-1000", "-t", "repl"]
        return self.tmux(*args, *(["-e"] if escapes else []))

    def wait_for(self, pattern: str, timeout: float = 60.0, escapes: bool = False) -> re.Match[str]:
        """Poll the pane until ``pattern`` (a regex) shows; fail with the screen after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen(escapes)
            match = re.search(pattern, screen)
            if match is not None:
                return match
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{pattern!r} did not appear in {timeout} s; screen:\n{screen}"
                )
            time.sleep(0.1)

    def tagged_processes(self) -> list[int]:
        """Live (not zombie) processes started by this REPL or its children."""
        found = []
        needle = f"LMC_REPL_TEST_TAG={self.tag}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if needle in environ.split(b"\0") and state != "Z":
                found.append(int(entry.name))
        return found

    def close(self) -> None:
        """Kill the tmux server; the REPL, hung up, shuts its interpreters down."""
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30, check=False
        )
        deadline = time.monotonic() + 30
        while self.tagged_processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in self.tagged_processes():  # only processes this test started
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
