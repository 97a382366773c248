"""Attacks on the renders a session's displays get (SVG through cairosvg and the
Chromium fallback, HTML through Chromium), now run in the session's sandbox:
content made to hang or blow up the renderer must end with the run's timeout,
and the session must go on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.service.server import Server, final_status, output
from tests.waiters import descends

from .harness import Account, serve_as
from .test_media_on_behalf import _renderer

pytestmark = pytest.mark.timeout(300)

_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE svg ['
    '<!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">'
    + "".join(
        f'<!ENTITY {b} "{("&" + a + ";") * 16}">' for a, b in zip("abcdefg", "bcdefgh", strict=True)
    )
    + ']><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>&h;</text></svg>'
)
_HUGE = '<svg xmlns="http://www.w3.org/2000/svg" width="200000" height="200000"><rect width="200000" height="200000" fill="red"/></svg>'
#: A colour cairosvg fails on (a browser ignores it) sends this one to Chromium.
_SCRIPTED = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="100%" height="100%">'
    "<script>while (true) {}</script><rect width='10' height='10' fill='rgb(0,128)'/></svg>"
)

_CASES = {
    "svg-billion-laughs": (
        "python",
        f"from IPython.display import SVG, display\ndisplay(SVG({_LAUGHS!r}))",
    ),
    "svg-huge-canvas": (
        "python",
        f"from IPython.display import SVG, display\ndisplay(SVG({_HUGE!r}))",
    ),
    "svg-looping-script": (
        "python",
        f"from IPython.display import SVG, display\ndisplay(SVG({_SCRIPTED!r}))",
    ),
    "html-looping-script": ("html", "<p>hi</p><script>while (true) {}</script>"),
}


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    with serve_as(account, "--pool-size", "0", "--max-sessions", "2") as running:
        yield running


@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_display_made_to_hang_its_renderer_ends_with_the_run(server: Server, case: str) -> None:
    """The run whose display hangs or blows up its renderer ends with a final
    message within its 4 s timeout (the client waits 60 s at most), and the
    session's next run answers."""
    language, code = _CASES[case]
    sid = server.create(languages=["python", "html"])
    try:
        messages = server.execute(sid, code, language=language, timeout=4)
        assert final_status(messages) in ("ok", "error", "timeout"), messages[-2:]
        assert messages[-1].get("type") != "code"
        after = server.execute(sid, "print('still here')")
        assert output(after) == "still here\n", after[-2:]
    finally:
        server.delete(sid)
    left = [pid for pid in _renderers() if descends(pid, server.process.pid)]
    assert left == [], f"renderers outlived the session: {left}"


def _renderers() -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if _renderer(argv):
                found.append(int(entry.name))
    return found
