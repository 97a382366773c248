"""JavaScript on real node: the code writing to the runner's events FIFO itself."""

from __future__ import annotations

import shutil

import pytest

from lmc_runtime import Computer
from tests.integration.conftest import run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]

FLOOD = """\
const fs = require('fs'), cp = require('child_process');
let fd = -1;
for (const f of fs.readdirSync('/proc/self/fd')) {
  try { if (fs.readlinkSync('/proc/self/fd/' + f).endsWith('/events')) fd = +f } catch {}
}
globalThis.flood = cp.spawn('sh', ['-c', 'head -c 128M /dev/zero | tr "\\\\0" a'],
  { stdio: ['ignore', fd, 'ignore'], detached: true });
'flooding ' + (fd >= 0)
"""


@pytest.mark.skipif(shutil.which("tr") is None, reason="no tr")
def test_regression_a_flood_of_the_events_fifo_leaves_the_session_answering() -> None:
    """Regression: a child given the events FIFO wrote 128 MiB with no newline; the
    host kept it all and joined it again with every read, without yielding: the
    server's event loop stalled for minutes (every session), and the run's own end,
    written after the garbage, was lost. Now runs during and after the flood answer,
    with their output and nothing of the garbage."""
    with Computer() as c:
        assert run(c, FLOOD, "javascript", timeout=60).output == "'flooding true'\n"
        during = run(c, "console.log(6 * 7)", "javascript", timeout=60)
        assert during.status == "ok" and during.output == "42\n"
        wait = "await new Promise(r => flood.exitCode !== null ? r() : flood.on('exit', r))\n"
        assert run(c, wait + "'over ' + flood.exitCode", "javascript", timeout=120).output == (
            "'over 0'\n"
        )
        after = run(c, "console.log('still works')", "javascript", timeout=60)
        assert after.status == "ok" and after.output == "still works\n"
