"""The transparent path with the kernel's redirect: a namespace of its own whose
firewall redirects the client's connections, ``SO_ORIGINAL_DST`` read for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("iptables"),
    reason="needs root, unshare and iptables for a network namespace with a REDIRECT rule",
)


def test_redirected_connections_are_checked_at_their_original_destination() -> None:
    probe = [sys.executable, "-m", "tests.integration.egress.redirected_probe"]
    done = subprocess.run(
        ["unshare", "--net", *probe],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr
    result = json.loads(lines[0][len("RESULT ") :])
    good, evil = result["ports"]
    assert result["named"].endswith("good /x")
    assert result["literal"] == "" and result["fronted"] == ""
    assert result["evil_seen"] == []
    assert result["seen"] == [["127.0.0.2", good], ["127.0.0.3", evil], ["127.0.0.3", evil]]
