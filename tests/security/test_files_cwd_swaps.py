"""Attacks on the files API rooted at a session's cwd: the code keeps swapping
its cwd (and the folders under it) for links to a host folder while a client
reads, writes, lists, makes and removes through it, and paths that climb out."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.service.server import Server, output

from .attacks import execute
from .harness import Account, serve_as

pytestmark = pytest.mark.timeout(300)

_SECRET = "host-secret-" + "c0ffee42"


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    with serve_as(account, "--pool-size", "0", "--max-sessions", "4") as running:
        yield running


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A host folder holding a secret, which anyone may read and write."""
    with tempfile.TemporaryDirectory(prefix="lmc-cwd-") as tmp:
        os.chmod(tmp, 0o777)
        (Path(tmp) / "secret.txt").write_text(_SECRET)
        os.chmod(Path(tmp) / "secret.txt", 0o644)
        (Path(tmp) / "sub").mkdir(mode=0o777)
        os.chmod(Path(tmp) / "sub", 0o777)
        yield Path(tmp)


def _swapper(target: Path) -> str:
    """Shell that, in the background, swaps ``proj`` and ``proj/sub`` for links to
    ``target`` and back as fast as it can, for some 20 s."""
    return (
        "cd /home/user && (end=$((SECONDS+20)); while [ $SECONDS -lt $end ]; do "
        f"mv proj proj.real; ln -s {target} proj; rm -f proj; mv proj.real proj; "
        f"mv proj/sub proj/sub.real; ln -s {target}/sub proj/sub; rm -f proj/sub; "
        "mv proj/sub.real proj/sub; done) >/dev/null 2>&1 </dev/null & echo started"
    )


def test_a_cwd_swapped_for_a_link_mid_request_never_leads_the_host_there(
    server: Server, host_dir: Path, account: Account
) -> None:
    """While the code swaps its cwd and a folder in it for links to a host folder,
    no read returns the host's file, no write, folder or removal lands there, no
    owner changes there, and no request is a 5xx."""
    sid = server.create(languages=["shell"], cwd="proj")
    before = {p.name: (p.stat().st_uid, p.stat().st_mode) for p in host_dir.iterdir()}
    try:
        execute(server, sid, "shell", "mkdir -p sub && echo mine > secret.txt && echo ok")
        assert "started" in output(execute(server, sid, "shell", _swapper(host_dir)))
        codes: dict[int, int] = {}
        deadline = time.monotonic() + 4
        with server.client() as client:
            base = f"/v1/sessions/{sid}"
            while time.monotonic() < deadline:
                answers = [
                    client.get(f"{base}/files/secret.txt"),
                    client.get(f"{base}/files/sub/secret.txt"),
                    client.get(f"{base}/list", params={"path": "sub"}),
                    client.get(f"{base}/list"),
                    client.put(f"{base}/files/sub/planted.txt", content=b"x"),
                    client.put(f"{base}/files/planted.txt", content=b"x"),
                    client.post(f"{base}/mkdir", json={"path": "sub/made/deeper", "parents": True}),
                    client.delete(f"{base}/files/sub/secret.txt"),
                    client.post(
                        f"{base}/move",
                        json={"source": "secret.txt", "destination": "sub/moved.txt"},
                    ),
                ]
                for answer in answers:
                    codes[answer.status_code] = codes.get(answer.status_code, 0) + 1
                    assert answer.status_code < 500, (answer.request.url, answer.text[:300])
                    assert _SECRET not in answer.text, answer.request.url
                    assert "secret.txt" not in answer.text or "proj" not in str(host_dir)
        print("answers by status", codes)
        # The swaps were seen: some requests met a link or a missing cwd.
        assert sum(n for code, n in codes.items() if code >= 400) > 0, codes
        after = {p.name: (p.stat().st_uid, p.stat().st_mode) for p in host_dir.iterdir()}
        assert after == before, (before, after, codes)
        assert sorted(p.name for p in (host_dir / "sub").iterdir()) == [], codes
        assert (host_dir / "secret.txt").read_text() == _SECRET
    finally:
        server.delete(sid)


@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "..%2Fsecret.txt",
        "%2E%2E/x",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "a/../../x",
        "%2E/x",
    ],
)
def test_paths_that_climb_out_of_the_cwd_are_400(server: Server, path: str) -> None:
    """``..``, absolute and '.' paths, plain or percent-encoded, are refused with a
    4xx by every route, never resolved above the session's cwd."""
    sid = server.create(languages=["shell"], cwd="proj")
    try:
        with server.client() as client:
            base = f"/v1/sessions/{sid}"
            for answer in (
                client.get(f"{base}/files/{path}"),
                client.put(f"{base}/files/{path}", content=b"x"),
                client.delete(f"{base}/files/{path}"),
                client.get(f"{base}/stat", params={"path": path.replace("%2F", "/")}),
                client.get(f"{base}/list", params={"path": path.replace("%2F", "/")}),
            ):
                assert 400 <= answer.status_code < 500, (path, answer.request.url, answer.text)
                assert "root:" not in answer.text
    finally:
        server.delete(sid)


@pytest.mark.parametrize(
    "cwd", ["/etc", "..", "a/../..", ".", "a//b", "a\x00b", "x" * 5000, "a/" * 300 + "b"]
)
def test_a_cwd_that_climbs_out_is_refused_at_creation(server: Server, cwd: str) -> None:
    """A session's cwd that is absolute, climbs with '..', has empty or '.' parts, a
    NUL, or is too long or too deep is a 400 naming cwd, never a session."""
    with server.client() as client:
        refused = client.post("/v1/sessions", json={"cwd": cwd, "languages": ["shell"]})
    assert refused.status_code == 400, refused.text[:300]
    assert "cwd" in refused.text


@pytest.mark.parametrize("cwd", ["-rf", "~", "--help"])
def test_a_cwd_named_like_an_option_or_home_is_only_a_folder_name(server: Server, cwd: str) -> None:
    """A cwd named like an option or '~' is a folder of that name under the home,
    where the code starts, and nothing else."""
    sid = server.create(languages=["shell"], cwd=cwd)
    try:
        assert output(execute(server, sid, "shell", "pwd")).strip() == f"/home/user/{cwd}"
    finally:
        server.delete(sid)
