"""Code a hostile tenant runs inside a session, and helpers to send it.

The attacks find what they can write the way real code would: from the
sandbox's own ``/proc/self/mountinfo`` (every read-write bind mount that is not
one of the private tmpfs folders), so they keep working whatever the layout.
"""

from __future__ import annotations

import json
from typing import Any

from tests.integration.service.server import Server

__all__ = ["FIND_WRITABLE", "execute", "planted_links_code"]

#: Python that defines ``writable()``: the session's read-write bind mounts.
FIND_WRITABLE = r"""
import os
def writable():
    found = []
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        point, options = fields[4], fields[5].split(",")
        fstype = fields[fields.index("-") + 1]
        if "rw" in options and fstype not in ("tmpfs", "proc", "devtmpfs", "mqueue", "devpts") \
                and point not in ("/", "/dev", "/proc") and not point.startswith(("/dev/", "/proc/", "/sys")):
            found.append(point)
    return found
"""

#: Names the host has used for its own files in a session's folders.
HOST_FILE_NAMES = [
    *(f"cell-{n}.{ext}" for n in range(1, 6) for ext in ("bash", "sh", "zsh")),
    "init.bash",
    "init.sh",
    "init.zsh",
    "events",
    "control",
    "stdin-1",
    "stdin-2",
    "connection.json",
    "kernel.log",
    "page.html",
    "chromium.log",
]
LANGUAGE_FOLDERS = ["", "shell", "javascript", "html", "python", "r", "sh", "zsh"]


def planted_links_code(target_dir: str) -> str:
    """Python that plants, in every writable folder and the language folders the
    host may create there, links named like the host's files to ``target_dir``."""
    return FIND_WRITABLE + (
        "import itertools\n"
        f"names = {HOST_FILE_NAMES!r}\n"
        f"folders = {LANGUAGE_FOLDERS!r}\n"
        "count = itertools.count()\n"
        "planted = 0\n"
        "for top in writable():\n"
        "    for sub in folders:\n"
        "        folder = os.path.join(top, sub)\n"
        "        try:\n"
        "            os.makedirs(folder, exist_ok=True)\n"
        "        except OSError:\n"
        "            continue\n"
        "        for name in names:\n"
        "            path = os.path.join(folder, name)\n"
        "            if os.path.lexists(path):\n"
        "                continue\n"
        "            try:\n"
        f"                os.symlink({target_dir!r} + '/t' + str(next(count)), path)\n"
        "                planted += 1\n"
        "            except OSError:\n"
        "                pass\n"
        "print('planted', planted)\n"
    )


def execute(server: Server, session_id: str, language: str, code: str) -> list[dict[str, Any]]:
    """Run ``code`` in ``language``; every message the server streamed back."""
    with server.client() as client:
        response = client.post(
            f"/v1/sessions/{session_id}/execute",
            json={"role": "assistant", "type": "code", "format": language, "content": code},
        )
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines() if line]


def restart(server: Server, session_id: str, language: str) -> int:
    with server.client() as client:
        response = client.post(f"/v1/sessions/{session_id}/restart", json={"language": language})
    return response.status_code
