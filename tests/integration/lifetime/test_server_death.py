"""``lmc serve`` killed outright (SIGKILL, no shutdown of its own) leaves no process
behind: each sandbox's supervisor ends its sandbox when the server ends (a forked
kernel's bwrap, the server's own child, dies with it), and with its PID namespace
everything in it (forked kernels, shells, what the code started).
What it leaves in its data directory (a session's mounted disk) is the next
start's to clean."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

from lmc_runtime.sandbox.forks import ForkServer

from ...waiters import process_ended
from ..service.server import TOKEN, _running, output

MARKER = "4343.4343"
_GUARD = 60.0


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry))
    return found


def test_a_server_killed_by_sigkill_leaves_no_process_behind() -> None:
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)  # sandboxes run as host uids of their own: let them pass
        _killed_server_leaves_nothing(Path(tmp) / "data")
        with _running(Path(tmp) / "data", ("--pool-size", "0"), TOKEN):
            pass  # its start cleans what the killed one left in its data directory


def _killed_server_leaves_nothing(data_dir: Path) -> None:
    with _running(data_dir, ("--pool-size", "1"), TOKEN) as server:
        session_id = server.create(languages=["python", "shell"])
        if ForkServer.supported():  # a forked kernel: no wrapper watches its sandbox
            forked = server.execute(session_id, "import os\nprint(os.getppid())")
            assert output(forked).strip() == "0", forked
        code = f"import subprocess\nsubprocess.Popen(['sleep', '{MARKER}'], start_new_session=True)"
        assert "returncode: None" in output(server.execute(session_id, code))
        shell = server.execute(session_id, f"sleep {MARKER}1 &\necho started", language="shell")
        assert "started" in output(shell), shell
        left = _processes_mentioning(MARKER) + _processes_mentioning(str(server.data_dir))
        assert len(_processes_mentioning(MARKER)) >= 2, left
        server.process.send_signal(signal.SIGKILL)
        assert server.process.wait(timeout=_GUARD) == -signal.SIGKILL
        outlived = [pid for pid in left if not process_ended(pid, _GUARD)]
    assert outlived == []
    assert _processes_mentioning(MARKER) == []
