"""``lmc run --remote``: a batch of LMC messages run in a session of a real lmc serve."""

from __future__ import annotations

import json
import subprocess
import sys

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
