"""What the host does on behalf of a session's content runs as that session, in its
cgroup and sandbox: an SVG display is rendered by the session's own processes, never
by the server's user in the server's cgroup (attacked through a real ``lmc serve``,
root and unprivileged)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.service.server import Server, final_status
from tests.waiters import descends

from .harness import Account, serve_as

#: An SVG that cairosvg cannot draw (a colour of two components: cairosvg fails on
#: it, a browser ignores it): the renderer of last resort, headless Chromium, gets it.
FALLBACK_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="240" height="160">'
    '<rect width="240" height="160" fill="rgb(0,128)"/>'
    + "".join(
        f'<circle cx="{20 + 4 * i}" cy="{30 + 2 * i}" r="{4 + i % 9}" fill="#{i:02x}80c0"/>'
        for i in range(50)
    )
    + "</svg>"
)
#: An SVG of undefined size (``width="100%"``, no viewBox), which cairosvg draws in
#: a browser's default image box: no Chromium is needed.
PERCENT_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="100%" height="100%">'
    + "".join(
        f'<circle cx="{20 + 7 * i}" cy="{30 + 5 * i}" r="{4 + i % 9}" fill="#{i:02x}80c0"/>'
        for i in range(50)
    )
    + "</svg>"
)
#: The renderer processes seen: pid -> (uid, cgroup, "chromium" or "cairosvg", pid namespace).
Seen = dict[int, tuple[int, str, str, str]]


def _display(svg: str) -> str:
    return f"from IPython.display import SVG, display\ndisplay(SVG({svg!r}))\nprint('shown')"


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    with serve_as(account, "--pool-size", "0", "--max-sessions", "2") as s:
        yield s


@pytest.fixture
def session(server: Server) -> Iterator[str]:
    """A session whose interpreter has started, deleted after the test."""
    sid = server.create(limits={"cpu_seconds": 5, "wall_seconds": 60})
    try:
        assert final_status(server.execute(sid, "print(1)")) == "ok"
        yield sid
    finally:
        server.delete(sid)


def _renderer(argv: list[bytes]) -> bool:
    """Chromium itself, or the cairosvg worker itself (not the launcher's wrappers,
    which the server starts for every process of a session and which drop to the
    session's user inside the sandbox)."""
    if b"chromium" in argv[0]:
        return True
    return len(argv) > 2 and argv[1] == b"-P" and argv[2].endswith(b"svg_worker.py")


def _renderers(server: int, seen: Seen, stop: threading.Event) -> None:
    """Every renderer process that appears until ``stop``: its uid and cgroup."""
    while not stop.is_set():
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) in seen:
                continue
            try:
                argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
                if not _renderer(argv) or not descends(int(entry.name), server):
                    continue
                uid = int(Path(entry.path, "status").read_text().split("\nUid:\t")[1].split()[0])
                cgroup = Path(entry.path, "cgroup").read_text().strip()
                namespace = os.readlink(Path(entry.path, "ns", "pid"))
            except (OSError, IndexError, ValueError):
                continue
            name = "chromium" if b"chromium" in argv[0] else "cairosvg"
            seen[int(entry.name)] = (uid, cgroup, name, namespace)
        stop.wait(0.02)


def _shown(server: Server, sid: str, svg: str) -> tuple[list[dict[str, Any]], Seen]:
    """The messages of displaying ``svg`` in session ``sid``, and every renderer
    process that ran meanwhile."""
    seen: Seen = {}
    stop = threading.Event()
    watcher = threading.Thread(
        target=_renderers, args=(server.process.pid, seen, stop), daemon=True
    )
    watcher.start()
    try:
        messages = server.execute(sid, _display(svg))
    finally:
        stop.set()
        watcher.join(10)
    assert final_status(messages) in ("ok", "cpu_limit", "wall_limit"), messages[-1]
    return messages, seen


def _no_picture(server: Server, messages: list[dict[str, Any]]) -> str:
    """Why no picture came: the notes in full (the renderers' reasons), then what
    the server logged of each failed attempt and how long it took."""
    notes = [str(m.get("content")) for m in messages if m["type"] != "image"]
    logged = [line for line in server.log().splitlines() if "rendering an SVG" in line]
    return "\n".join(["no picture; the run said:", *notes, "the server logged:", *logged[-6:]])


def _in_the_session(server: Server, account: Account, seen: Seen) -> None:
    server_namespace = os.readlink(f"/proc/{server.process.pid}/ns/pid")
    for pid, (uid, cgroup, _, namespace) in seen.items():
        assert uid != 0 and namespace != server_namespace, (pid, uid, namespace)  # in the sandbox
        if account.root:  # sessions have host uids and cgroups of their own
            assert uid != account.uid and "pids:/lmc-" in cgroup, (pid, uid, cgroup)


def test_regression_an_svg_display_is_rendered_by_the_session_not_by_the_server(
    server: Server, account: Account, session: str
) -> None:
    """Regression: an SVG that cairosvg could not render fell back to Chromium run by
    the server itself (uid 0 in the root cgroup, ``--no-sandbox``): 11 processes and
    12-18 CPU-seconds against a session allowed one. Every renderer now runs under
    the session's launcher: its sandbox, its user, its cgroup."""
    messages, seen = _shown(server, session, FALLBACK_SVG)
    assert any(m["type"] == "image" for m in messages), _no_picture(server, messages)
    assert seen, "no renderer ran: the attack did not reach the renderer"
    assert any(name == "chromium" for _, _, name, _ in seen.values()), seen  # the fallback ran
    _in_the_session(server, account, seen)


def test_regression_an_svg_of_undefined_size_is_drawn_by_cairosvg_in_the_session(
    server: Server, account: Account, session: str
) -> None:
    """Regression: cairosvg refused an SVG of ``width="100%"`` ("The SVG size is
    undefined"), so its picture rested on Chromium alone; in a loaded CI run that
    failed too and the display came back as a note. cairosvg now draws it in a
    browser's default image box, in the session's sandbox, and Chromium never starts."""
    messages, seen = _shown(server, session, PERCENT_SVG)
    assert any(m["type"] == "image" for m in messages), _no_picture(server, messages)
    names = sorted({name for _, _, name, _ in seen.values()})
    assert names == ["cairosvg"], seen  # drawn by cairosvg: no fallback was needed
    _in_the_session(server, account, seen)
