"""``lmc serve`` for operators: a start that cannot happen is one line and exit 2;
"listening" comes once the port answers, with the real port; the access log in
JSON without the token; limit replies carry the runtime's note, no kernel banner
and no host path."""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ...lifeline import tie
from .server import TOKEN, Server, final_status, output, running_server

SERVE = [sys.executable, "-m", "lmc_runtime", "serve"]


@pytest.fixture
def data_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)
        yield Path(tmp) / "data"


def _refused(*args: str, env: dict[str, str] | None = None) -> str:
    """Run ``lmc serve args`` that must not start: its one line on stderr."""
    environ = {**os.environ, "LMC_TOKEN": TOKEN, **(env or {})}
    done = subprocess.run(
        [*SERVE, *args], capture_output=True, text=True, timeout=60, env=environ, check=False
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "listening" not in done.stdout
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("lmc serve: ")
    return lines[0]


def test_a_taken_port_is_one_line_and_exit_2(data_dir: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        line = _refused("--port", str(port), "--data-dir", str(data_dir))
    assert line == f"lmc serve: cannot listen on 127.0.0.1:{port}: the address is already in use"


def test_a_data_dir_held_by_another_server_is_one_line_and_exit_2() -> None:
    with running_server("--pool-size", "0") as server:
        line = _refused("--port", "0", "--data-dir", str(server.data_dir))
        assert "another lmc serve is using the data directory" in line
        assert httpx.get(server.url + "/healthz", timeout=10).status_code == 200


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--memory", "12X"], {}, "--memory: '12X' is not a size"),
        ([], {"LMC_SERVE_PROCESSES": "many"}, "LMC_SERVE_PROCESSES: 'many'"),
        ([], {"LMC_SERVE_LOG_FORMAT": "xml"}, "LMC_SERVE_LOG_FORMAT"),
        # Regression: argparse's own errors were its usage, then the error, in 3 lines.
        (["--no-such-flag"], {}, "unrecognized arguments: --no-such-flag (see lmc serve --help)"),
        (["--pool-size"], {}, "--pool-size: expected one argument"),
        # Regression: a limit below the sandbox's least passed the flag's own check
        # and was refused later, in other words, when the settings were made.
        (["--memory", "40M"], {}, "--memory: '40M' is below the least allowed, 64M"),
        ([], {"LMC_SERVE_PROCESSES": "10"}, "LMC_SERVE_PROCESSES: '10' is below the least"),
    ],
)
def test_a_bad_flag_or_env_value_is_one_line_and_exit_2(
    data_dir: Path, args: list[str], env: dict[str, str], named: str
) -> None:
    assert named in _refused(*args, "--data-dir", str(data_dir), env=env)


@pytest.mark.parametrize(
    ("toml", "named"), [("pool_size = 'two'\n", "pool_size"), ("colour = 1\n", "unknown key")]
)
def test_a_bad_toml_key_or_value_is_one_line_and_exit_2(
    data_dir: Path, tmp_path: Path, toml: str, named: str
) -> None:
    config = tmp_path / "serve.toml"
    config.write_text(toml)
    line = _refused("--config", str(config), "--data-dir", str(data_dir))
    assert str(config) in line and named in line


def test_a_failed_start_of_the_application_is_one_line_and_exit_2(data_dir: Path) -> None:
    data_dir.mkdir()
    (data_dir / "sessions").write_text("not a folder")  # the sessions cannot live there
    environ = {**os.environ, "LMC_TOKEN": TOKEN}
    done = subprocess.run(
        [*SERVE, "--port", "0", "--pool-size", "0", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "listening" not in done.stdout
    said = [line for line in done.stderr.splitlines() if line.startswith("lmc serve:")]
    assert len(said) == 1 and "cannot start" in said[0], done.stderr


def _read_until(process: subprocess.Popen[str], pattern: str, bound: float) -> re.Match[str]:
    """Read ``process``'s stdout until a line matches ``pattern`` (at most ``bound`` s)."""
    assert process.stdout is not None
    deadline = time.monotonic() + bound
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no line matched {pattern!r} within {bound} s"
            if selector.select(left):
                line = process.stdout.readline()
                assert line, "lmc serve ended before saying it listens"
                match = re.search(pattern, line)
                if match:
                    return match


def test_port_0_is_announced_with_the_real_port_once_it_answers_and_logs_are_json(
    data_dir: Path,
) -> None:
    argv = [*SERVE, "--port", "0", "--pool-size", "0", "--data-dir", str(data_dir)]
    environ = {**os.environ, "LMC_TOKEN": TOKEN, "LMC_SERVE_LOG_FORMAT": "json"}
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
        start_new_session=True,  # its session ends with this process (tie)
    )
    tie(process)
    try:
        match = _read_until(process, r"^lmc serve: listening on http://127\.0\.0\.1:(\d+)$", 90)
        port = int(match.group(1))
        assert port != 0
        # Announced only once served: the first request is answered.
        url = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
        response = httpx.get(f"{url}/v1/sessions", params={"token": TOKEN}, timeout=10)
        assert response.status_code in (200, 401)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode in (0, -signal.SIGTERM), stderr
    lines = [json.loads(line) for line in stderr.splitlines()]
    access = [line for line in lines if line["logger"] == "lmc_runtime.access"]
    assert any(a["path"] == "/healthz" and a["status"] == 200 for a in access), access
    listed = [a for a in access if a["path"].startswith("/v1/sessions")]
    assert listed and listed[0]["path"] == "/v1/sessions?token=[redacted]"
    assert listed[0]["method"] == "GET" and listed[0]["client"].startswith("127.0.0.1:")
    assert TOKEN not in stderr


_HOST_PATHS = ("site-packages", "--existing", "kernel-", ".json", "NOTE: When using")

#: Each prints "before", then passes a limit. The memory one flushes it: its kill
#: comes within the stream's 0.2 s tick, and a killed kernel takes what it has not
#: sent with it.
LIMITED = {
    "memory": (
        "import sys\nx = []\nprint('before')\nsys.stdout.flush()\n"
        "while True:\n    x.append(bytearray(10**7))\n",
        {"memory_bytes": 200_000_000},
        "memory_limit",
    ),
    "processes": (
        "import os\nprint('before')\nwhile True:\n    os.fork()\n",
        {"processes": 48},
        "process_limit",
    ),
    "disk": (
        'chunk = b"x" * (1 << 20)\nprint("before")\n'
        'with open("fill.bin", "wb") as f:\n    while True:\n        f.write(chunk)\n'
        "        f.flush()\n",
        {"disk_bytes": 16 << 20, "file_size_bytes": 64 << 20},
        "disk_limit",
    ),
}


def _notes(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages[:-1] if "status" in (m.get("extras") or {})]


@pytest.mark.parametrize("kind", list(LIMITED))
def test_a_limit_reply_has_the_runtime_note_and_no_banner_or_host_path(
    server: Server, kind: str
) -> None:
    """Guards against the OOM reply carrying the kernel's last words (ipykernel's
    start-up banner with the connection file's host path) before the note."""
    code, limits, status = LIMITED[kind]
    session = server.create(limits=limits)
    try:
        messages = server.execute(session, code)
        assert output(messages).startswith("before\n")
        assert final_status(messages) == status
        assert [n["extras"]["status"] for n in _notes(messages)] == [status]
        reply = json.dumps(messages)
        assert str(server.data_dir) not in reply
        for leak in _HOST_PATHS:
            assert leak not in reply, (leak, reply[:2000])
        assert output(server.execute(session, "print('alive')")) == "alive\n"
    finally:
        server.delete(session)
