"""The files API against a real ``lmc serve``: every route, every refusal, and the
attacks code in the session can mount through it (links to host files, FIFOs,
a folder swapped for a link while the host walks it)."""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .server import Server, output


@pytest.fixture
def sid(server: Server) -> Iterator[str]:
    session_id = server.create()
    try:
        yield session_id
    finally:
        server.delete(session_id)


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A host folder outside every session, holding a file nothing may touch."""
    with tempfile.TemporaryDirectory(prefix="lmc-host-") as tmp:
        (Path(tmp) / "secret").write_text("host data")
        yield Path(tmp)


def _refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code, response.text


def _listing(client: httpx.Client, sid: str, path: str = "") -> dict[str, Any]:
    response = client.get(f"/v1/sessions/{sid}/list", params={"path": path})
    assert response.status_code == 200, response.text
    listing: dict[str, Any] = response.json()
    return listing


def test_upload_answers_a_file_info_and_list_and_stat_show_it(server: Server, sid: str) -> None:
    with server.client() as client:
        put = client.put(f"/v1/sessions/{sid}/files/d/b.txt", content=b"hello")
        assert put.status_code == 201, put.text
        assert put.json()["path"] == "d/b.txt" and put.json()["kind"] == "file"
        assert (put.json()["name"], put.json()["size"]) == ("b.txt", 5)
        server.execute(sid, "import os\nos.mkdir('d/a')\nos.symlink('b.txt', 'd/c')")
        listing = _listing(client, sid, "d")
        assert listing["path"] == "d" and listing["truncated"] is False
        entries = [(e["name"], e["path"], e["kind"]) for e in listing["entries"]]
        assert entries == [
            ("a", "d/a", "directory"),
            ("b.txt", "d/b.txt", "file"),
            ("c", "d/c", "symlink"),
        ]
        assert "d" in [e["name"] for e in _listing(client, sid)["entries"]]
        stat = client.get(f"/v1/sessions/{sid}/stat", params={"path": "d/b.txt"})
        assert stat.status_code == 200 and stat.json() == put.json()
        assert client.get(f"/v1/sessions/{sid}/stat", params={"path": "d"}).json()["kind"] == (
            "directory"
        )
        _refused(
            client.get(f"/v1/sessions/{sid}/stat", params={"path": "nope"}), 404, "file_not_found"
        )
        _refused(
            client.get(f"/v1/sessions/{sid}/list", params={"path": "nope"}), 404, "file_not_found"
        )
        _refused(
            client.get(f"/v1/sessions/{sid}/list", params={"path": "d/b.txt"}),
            400,
            "not_a_directory",
        )
        _refused(client.get(f"/v1/sessions/{sid}/files/d"), 400, "is_a_directory")


def test_mkdir_makes_folders_the_session_s_code_can_write_into(server: Server, sid: str) -> None:
    url = f"/v1/sessions/{sid}/mkdir"
    with server.client() as client:
        made = client.post(url, json={"path": "made"})
        assert made.status_code == 201, made.text
        assert made.json()["kind"] == "directory" and made.json()["path"] == "made"
        _refused(client.post(url, json={"path": "made"}), 409, "file_exists")
        assert client.post(url, json={"path": "made", "parents": True}).status_code == 201
        _refused(client.post(url, json={"path": "x/y"}), 404, "file_not_found")
        assert client.post(url, json={"path": "x/y/z", "parents": True}).status_code == 201
        client.put(f"/v1/sessions/{sid}/files/file", content=b"x")
        _refused(client.post(url, json={"path": "file", "parents": True}), 409, "file_exists")
        _refused(
            client.post(url, json={"path": "file/sub", "parents": True}), 400, "not_a_directory"
        )
        no_path = client.post(url, json={"parents": True})
        _refused(no_path, 400, "bad_request")
        assert no_path.json()["error"]["message"] == "path: is required"
        wrong = client.post(url, json={"path": "p", "parents": "yes"})
        _refused(wrong, 400, "bad_request")
        assert wrong.json()["error"]["message"] == "parents: must be true or false"
        _refused(client.post(url, content=b"{not json"), 400, "malformed")
    code = "open('made/in', 'w').write('a'); open('x/y/z/in', 'w').write('b'); print('wrote')"
    assert output(server.execute(sid, code)) == "wrote\n"


def test_delete_files_and_folders(server: Server, sid: str) -> None:
    base = f"/v1/sessions/{sid}/files"
    server.execute(sid, "import os\nos.makedirs('full/deep')\nopen('full/deep/f', 'w').close()")
    with server.client() as client:
        client.put(f"{base}/f", content=b"x")
        assert client.delete(f"{base}/f").status_code == 204
        _refused(client.delete(f"{base}/f"), 404, "file_not_found")
        _refused(client.delete(f"{base}/full"), 409, "directory_not_empty")
        _refused(
            client.delete(f"{base}/full", params={"recursive": "false"}), 409, "directory_not_empty"
        )
        assert client.delete(f"{base}/full/deep/f").status_code == 204
        assert client.delete(f"{base}/full/deep").status_code == 204
        server.execute(
            sid, "os.makedirs('full/deep', exist_ok=True); open('full/deep/g', 'w').close()"
        )
        assert client.delete(f"{base}/full", params={"recursive": "true"}).status_code == 204
        assert [e["name"] for e in _listing(client, sid)["entries"] if e["name"] == "full"] == []


def test_move_files_and_folders(server: Server, sid: str) -> None:
    url = f"/v1/sessions/{sid}/move"
    with server.client() as client:
        client.put(f"/v1/sessions/{sid}/files/a", content=b"aaa")
        client.put(f"/v1/sessions/{sid}/files/b", content=b"b")
        client.put(f"/v1/sessions/{sid}/files/d/inner", content=b"i")
        moved = client.post(url, json={"source": "a", "destination": "to/c"})
        assert moved.status_code == 200, moved.text
        assert (moved.json()["path"], moved.json()["name"], moved.json()["size"]) == (
            "to/c",
            "c",
            3,
        )
        _refused(client.post(url, json={"source": "to/c", "destination": "b"}), 409, "file_exists")
        assert (
            client.post(url, json={"source": "to/c", "destination": "b", "overwrite": True}).json()[
                "size"
            ]
            == 3
        )
        _refused(
            client.post(url, json={"source": "gone", "destination": "x"}), 404, "file_not_found"
        )
        _refused(client.post(url, json={"source": "d", "destination": "d/sub"}), 400, "bad_path")
        _refused(
            client.post(url, json={"source": "b", "destination": "d", "overwrite": True}),
            400,
            "is_a_directory",
        )
        _refused(client.post(url, json={"source": "b"}), 400, "bad_request")
        assert (
            client.post(url, json={"source": "d", "destination": "e"}).json()["kind"] == "directory"
        )
    listing = "import os\nprint(sorted(n for n in os.listdir('.') if n[0] != '.'), open('e/inner').read(), open('b').read())"
    assert output(server.execute(sid, listing)) == "['b', 'e', 'to'] i aaa\n"


@pytest.mark.parametrize("bad", ["../x", "/etc", "a//b", "./a", "a/..", "a/./b", "x\x00y"])
def test_every_route_refuses_paths_that_could_escape(server: Server, sid: str, bad: str) -> None:
    base = f"/v1/sessions/{sid}"
    with server.client() as client:
        answers = [
            client.get(f"{base}/list", params={"path": bad}),
            client.get(f"{base}/stat", params={"path": bad}),
            client.post(f"{base}/mkdir", json={"path": bad, "parents": True}),
            client.post(f"{base}/move", json={"source": bad, "destination": "x"}),
            client.post(f"{base}/move", json={"source": "x", "destination": bad}),
        ]
        for answer in answers:
            _refused(answer, 400, "bad_path")
        _refused(client.delete(f"{base}/files/..%2Fx"), 400, "bad_path")


@pytest.mark.parametrize(
    "body",
    [
        ("mkdir", {"path": "typed", "parents": "yes"}),
        ("mkdir", {"path": "typed", "parents": 1}),
        ("mkdir", {"path": "typed", "parents": "false"}),
        ("mkdir", {"path": 7}),
        ("move", {"source": "b", "destination": "typed", "overwrite": "true"}),
        ("move", {"source": "b", "destination": "typed", "overwrite": 0}),
    ],
)
def test_json_bodies_are_strict_about_types(
    server: Server, sid: str, body: tuple[str, dict[str, Any]]
) -> None:
    """Regression: mkdir took "parents": "yes" (or 1) for true, and move its
    "overwrite" alike, while creating a session refused such values; a value of
    the wrong type is now refused (400), and nothing is made or moved."""
    route, fields = body
    with server.client() as client:
        assert client.put(f"/v1/sessions/{sid}/files/b", content=b"b").status_code == 201
        answer = client.post(f"/v1/sessions/{sid}/{route}", json=fields)
        _refused(answer, 400, "bad_request")
        assert client.get(f"/v1/sessions/{sid}/stat", params={"path": "typed"}).status_code == 404


PLANT = """import os, hashlib
os.symlink('/etc/passwd', 'passwd')
os.symlink({secret!r}, 'hostfile')
os.symlink({host!r}, 'hostdir')
os.mkfifo('fifo')
os.mkdir('d')
open('f', 'w').write('session file')
print('planted')
"""


def test_links_and_fifos_planted_by_the_session_are_refused_by_every_route(
    server: Server, sid: str, host_dir: Path
) -> None:
    """Guards the host's files against "plant a link, let the host follow it", and
    the server against a FIFO it would block on."""
    passwd = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    code = PLANT.format(secret=str(host_dir / "secret"), host=str(host_dir))
    assert output(server.execute(sid, code)) == "planted\n"
    base = f"/v1/sessions/{sid}"
    with server.client() as client:
        entries = _listing(client, sid)["entries"]
        kinds = {e["name"]: e["kind"] for e in entries if not e["name"].startswith(".")}
        assert kinds == {
            "d": "directory",
            "f": "file",
            "fifo": "other",
            "hostdir": "symlink",
            "hostfile": "symlink",
            "passwd": "symlink",
        }
        for path in ("hostdir", "fifo", "hostdir/x", "fifo/x"):
            _refused(client.get(f"{base}/list", params={"path": path}), 400, "unsafe_path")
        for path in ("passwd", "hostfile", "hostdir", "hostdir/secret", "fifo"):
            _refused(client.get(f"{base}/stat", params={"path": path}), 400, "unsafe_path")
            for recursive in ("false", "true"):
                answer = client.delete(f"{base}/files/{path}", params={"recursive": recursive})
                _refused(answer, 400, "unsafe_path")
            answer = client.post(f"{base}/move", json={"source": path, "destination": "stolen"})
            _refused(answer, 400, "unsafe_path")
        for path in ("hostdir/new", "hostdir/a/b", "fifo/new"):
            answer = client.post(f"{base}/mkdir", json={"path": path, "parents": True})
            _refused(answer, 400, "unsafe_path")
        for destination in ("passwd", "hostfile", "hostdir/secret", "hostdir/new", "fifo"):
            move = {"source": "f", "destination": destination, "overwrite": True}
            _refused(client.post(f"{base}/move", json=move), 400, "unsafe_path")
        assert client.get("/healthz").status_code == 200
    assert hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest() == passwd
    assert sorted(p.name for p in host_dir.iterdir()) == ["secret"]
    assert (host_dir / "secret").read_text() == "host data"
    left = "print(sorted(n for n in os.listdir('.') if n[0] != '.'), open('f').read())"
    assert output(server.execute(sid, left)) == (
        "['d', 'f', 'fifo', 'hostdir', 'hostfile', 'passwd'] session file\n"
    )


SWAP = """import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs('d', exist_ok=True)
os.symlink({host!r}, 'link')
end = time.monotonic() + 60
swaps = 0
while not os.path.exists('stop') and time.monotonic() < end:
    # 'd' and 'link' trade places atomically (RENAME_EXCHANGE): 'd' is always there,
    # a folder one moment and a link to the host folder the next.
    if libc.renameat2(-100, b'd', -100, b'link', 2) != 0:
        raise OSError(ctypes.get_errno(), 'renameat2')
    swaps += 1
print('swapped', swaps > 0)
"""


def test_a_folder_swapped_for_a_link_while_the_host_walks_it_never_leads_out(
    server: Server, sid: str, host_dir: Path
) -> None:
    """Guards the race a check-then-use implementation loses: the session's code
    swaps ``d`` for a link to a host folder and back, as fast as it can, while
    every route walks through ``d``; the host folder stays as it was."""
    results: list[list[dict[str, Any]]] = []
    swapper = threading.Thread(
        target=lambda: results.append(server.execute(sid, SWAP.format(host=str(host_dir))))
    )
    swapper.start()
    base = f"/v1/sessions/{sid}"
    statuses: set[int] = set()
    try:
        with server.client() as client:
            client.put(f"{base}/files/src", content=b"x")
            for round_ in range(60):
                answers = [
                    client.post(f"{base}/mkdir", json={"path": f"d/m{round_}", "parents": True}),
                    client.post(
                        f"{base}/move",
                        json={"source": "src", "destination": "d/secret", "overwrite": True},
                    ),
                    client.post(f"{base}/move", json={"source": "d/secret", "destination": "src"}),
                    client.get(f"{base}/stat", params={"path": "d/secret"}),
                    client.get(f"{base}/list", params={"path": "d"}),
                    client.delete(f"{base}/files/d/secret"),
                ]
                statuses.update(answer.status_code for answer in answers)
    finally:
        with server.client() as client:
            client.put(f"{base}/files/stop", content=b"")
        swapper.join(90)
    assert not swapper.is_alive()
    assert output(results[0]) == "swapped True\n"
    assert sorted(p.name for p in host_dir.iterdir()) == ["secret"]
    assert (host_dir / "secret").read_text() == "host data"
    assert all(status < 500 for status in statuses), statuses


def test_a_huge_folder_is_listed_in_part_and_says_so(server: Server, sid: str) -> None:
    code = "import os\nos.mkdir('many')\nfor i in range(10_050):\n    open(f'many/{i:05}', 'w').close()"
    server.execute(sid, code)
    with server.client() as client:
        listing = _listing(client, sid, "many")
    assert listing["truncated"] is True and len(listing["entries"]) == 10_000
    names = [entry["name"] for entry in listing["entries"]]
    assert names == sorted(names) and len(set(names)) == 10_000


def test_regression_a_refusal_names_the_path_as_the_client_sent_it(server: Server) -> None:
    """Regression: in a session made with a cwd, the files API's refusals named the
    path from the working directory ('project/in/missing.csv') where the client had
    sent it relative to the cwd ('in/missing.csv'), as every answer that succeeds has it."""
    session_id = server.create(cwd="project")
    try:
        with server.client() as client:
            response = client.get(f"/v1/sessions/{session_id}/stat", params={"path": "in/x.csv"})
            assert response.status_code == 404, response.text
            message = response.json()["error"]["message"]
            assert "'in/x.csv'" in message and "project" not in message, message
            response = client.request("DELETE", f"/v1/sessions/{session_id}/files/nothing/here.txt")
            assert response.status_code == 404 and "project" not in response.text
    finally:
        server.delete(session_id)
