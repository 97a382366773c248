"""``lmc run --remote``: a batch of LMC messages run in a session of a real lmc serve."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..service.server import TOKEN, Server

BATCH = "\n".join(
    json.dumps({"role": "assistant", "type": "code", "format": language, "content": code})
    for language, code in [
        ("python", "kept = 6 * 7"),
        ("python", "print(kept)"),
        ("shell", "echo from-the-shell"),
        ("javascript", "1"),
    ]
)


def lmc(*args: str, stdin: str = BATCH) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lmc_runtime", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def sessions(server: Server) -> int:
    with server.client() as client:
        return len(client.get("/v1/sessions").json()["sessions"])


def test_lmc_run_remote_runs_the_batch_in_one_session(server: Server) -> None:
    before = sessions(server)
    done = lmc("run", "--remote", server.url, "--token", TOKEN, "--languages", "python,shell")
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    outputs = [r["content"] for r in replies if r["format"] == "output"]
    assert "42\n" in outputs and "from-the-shell\n" in outputs
    # javascript is not one of the session's languages: not understood, exit status 1.
    assert any(r.get("extras", {}).get("status") == "not_understood" for r in replies)
    assert done.returncode == 1, done.stderr
    assert sessions(server) <= before  # its session was deleted at the end


def test_lmc_run_remote_with_a_wrong_token_says_so_in_one_line(server: Server) -> None:
    done = lmc("run", "--remote", server.url, "--token", "wrong")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "bearer token" in done.stderr


def test_lmc_repl_remote_runs_what_is_typed_in_a_remote_session(
    server: Server, tmp_path: Path
) -> None:
    env = {**os.environ, "LMC_STATE_DIR": str(tmp_path / "state"), "LMC_TOKEN": TOKEN}
    done = subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "repl", "--remote", server.url, "--jsonl"],
        input="x = 6 * 7\nprint(x)\n%shell\necho $0-is-not-in-the-session\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert "42\n" in [r["content"] for r in replies if r["format"] == "output"]
    assert "shell is not available here" in done.stderr  # the session runs python only
