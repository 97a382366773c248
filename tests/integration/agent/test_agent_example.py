"""examples/agent_loop.py against the scripted server, configured through the
environment and through flags, saving its thread in a Jan folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lmc_runtime.store import JanThreadStore

from .conftest import ServerFactory

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "agent_loop.py"
SCRIPT = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "execute",
                    "arguments": json.dumps({"language": "python", "code": "print(2 ** 10)"}),
                },
            }
        ],
    },
    {"role": "assistant", "content": "2 to the 10th is 1024."},
]


@pytest.mark.parametrize("configured_by", ["environment", "flags"])
def test_example_runs_the_loop_and_saves_the_thread(
    scripted_server: ServerFactory, tmp_path: Path, configured_by: str
) -> None:
    server = scripted_server(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LMC_", "OPENAI_"))}
    argv = [sys.executable, str(EXAMPLE), "What is 2**10?", "--thread-dir", str(tmp_path)]
    if configured_by == "environment":
        env |= {"LMC_BASE_URL": server.base_url, "LMC_MODEL": "m-env", "LMC_API_KEY": "k-env"}
    else:
        argv += ["--base-url", server.base_url, "--model", "m-flag", "--api-key", "k-flag"]
    done = subprocess.run(
        argv,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "print(2 ** 10)" in done.stdout
    assert "1024\n" in done.stdout
    assert "assistant: 2 to the 10th is 1024." in done.stdout
    suffix = "env" if configured_by == "environment" else "flag"
    assert [r["model"] for r in server.requests] == [f"m-{suffix}"] * 2
    assert server.headers_seen[0]["Authorization"] == f"Bearer k-{suffix}"

    store = JanThreadStore(tmp_path)
    (thread,) = store.list()
    saved = store.messages(thread.id)
    assert [m.type for m in saved][:2] == ["message", "code"]
    assert any(m.content == "1024\n" for m in saved)
    assert all(m.conversation_id == thread.id for m in saved)


def test_example_reports_an_unreachable_endpoint(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        str(EXAMPLE),
        "hi",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
    ]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL, check=False
    )
    assert done.returncode == 1
    assert "error: the chat endpoint failed" in done.stderr
