"""File upload and download, and the paths they refuse."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator

import httpx

from .server import Server, output


def test_upload_download_and_refusals(server: Server) -> None:
    session_id = server.create()
    base = f"/v1/sessions/{session_id}/files"
    try:
        with server.client() as client:
            assert client.put(f"{base}/data/in.txt", content=b"uploaded\n").status_code == 201
            messages = server.execute(session_id, "print(open('data/in.txt').read(), end='')")
            assert output(messages) == "uploaded\n"
            server.execute(session_id, "open('out.bin', 'wb').write(bytes(range(256)))")
            download = client.get(f"{base}/out.bin")
            assert download.status_code == 200 and download.content == bytes(range(256))

            assert client.get(f"{base}/missing.txt").status_code == 404
            for bad in ("a/../../etc/passwd", "%2Fetc%2Fpasswd", "..%2Fx"):
                refused = client.get(f"{base}/{bad}")
                assert refused.status_code in (400, 404), bad
                assert refused.json()["error"]["code"] in ("bad_path", "not_found"), bad
            dotdot = client.put(f"{base}/..%2Fescape.txt", content=b"x")
            assert dotdot.status_code == 400 and dotdot.json()["error"]["code"] == "bad_path"
            absolute = client.get(f"{base}//etc/passwd")
            assert absolute.status_code == 400

            # Links planted by user code are never followed, for reading or writing.
            server.execute(
                session_id,
                "import os\nos.symlink('/etc/passwd', 'link')\nos.mkdir('d')\n"
                "os.symlink('/etc', 'd/up')",
            )
            for target in ("link", "d/up/passwd"):
                refused = client.get(f"{base}/{target}")
                assert refused.status_code == 400, target
                assert refused.json()["error"]["code"] == "unsafe_path"
            assert client.put(f"{base}/link", content=b"owned").status_code == 400
            assert client.put(f"{base}/d/up/evil", content=b"owned").status_code == 400
    finally:
        server.delete(session_id)


def test_upload_past_the_limit_is_413(server: Server) -> None:
    session_id = server.create(limits={"file_size_bytes": 1000})
    try:
        with server.client() as client:
            too_big = client.put(f"/v1/sessions/{session_id}/files/big", content=b"x" * 5000)
        assert too_big.status_code == 413
        assert too_big.json()["error"]["code"] == "too_large"
    finally:
        server.delete(session_id)


PLANT = """import os, socket, stat
os.mkfifo('fifo')
os.mkdir('folder')
listener = socket.socket(socket.AF_UNIX)
listener.bind('sock')
try:
    os.mknod('device', 0o666 | stat.S_IFCHR, os.makedev(1, 3))
except OSError as exc:
    print('no device node:', exc.strerror)
print(sorted(os.listdir('.')))
"""


def test_special_files_are_refused_at_once_and_the_server_keeps_answering(
    server: Server,
) -> None:
    """Regression: a FIFO, socket, device or folder planted where a file is expected
    gets a 4xx without the request (or any other) waiting on it."""
    session_id = server.create()
    base = f"/v1/sessions/{session_id}/files"
    try:
        planted = output(server.execute(session_id, PLANT))
        names = ["fifo", "sock", "folder"] + (["device"] if "'device'" in planted else [])
        answers: dict[str, httpx.Response] = {}

        def download(name: str) -> None:
            with server.client() as client:
                answers[name] = client.get(f"{base}/{name}", timeout=30)

        workers = [threading.Thread(target=download, args=(name,)) for name in names]
        for worker in workers:
            worker.start()
        with server.client() as client:
            assert client.get("/healthz", timeout=30).status_code == 200
        for worker in workers:
            worker.join(60)
        for name in names:
            refused = answers[name]
            assert refused.status_code == 400, (name, refused.text)
            code = "is_a_directory" if name == "folder" else "not_a_regular_file"
            assert refused.json()["error"]["code"] == code, refused.text
        with server.client() as client:
            through = client.get(f"{base}/fifo/x", timeout=30)
            assert through.status_code == 400 and through.json()["error"]["code"] == "unsafe_path"
            for name, code in [
                ("fifo", "not_a_regular_file"),
                ("sock", "not_a_regular_file"),
                ("folder", "is_a_directory"),
            ]:
                refused = client.put(f"{base}/{name}", content=b"data", timeout=30)
                assert refused.status_code == 400, (name, refused.text)
                assert refused.json()["error"]["code"] == code, refused.text
        left = output(server.execute(session_id, "print(sorted(os.listdir('.')))"))
        assert ".lmc-upload" not in left, left
    finally:
        server.delete(session_id)


def test_upload_streams_in_pieces_and_a_refused_one_leaves_nothing(server: Server) -> None:
    session_id = server.create(limits={"file_size_bytes": 2 << 20})
    url = f"/v1/sessions/{session_id}/files/up/big.bin"
    piece = bytes(range(256)) * 256  # 64 KiB

    def body(pieces: int) -> Iterator[bytes]:
        for _ in range(pieces):
            yield piece

    try:
        with server.client() as client:
            # No Content-Length: the limit is enforced while the pieces arrive.
            done = client.put(url, content=body(24))  # 1.5 MiB
            assert done.status_code == 201, done.text
            assert done.json()["size"] == 24 * len(piece)
            refused = client.put(url, content=body(48))  # 3 MiB, past the 2 MiB limit
            assert refused.status_code == 413 and refused.json()["error"]["code"] == "too_large"
        check = (
            "import hashlib, os\n"
            "print(os.path.getsize('up/big.bin'), sorted(os.listdir('up')))\n"
            "print(hashlib.sha256(open('up/big.bin', 'rb').read()).hexdigest())"
        )
        size, digest = output(server.execute(session_id, check)).splitlines()
        # The refused upload left the earlier file whole, and no temporary file.
        assert size == f"{24 * len(piece)} ['big.bin']"
        assert digest == hashlib.sha256(piece * 24).hexdigest()
    finally:
        server.delete(session_id)


def test_uploaded_files_and_folders_belong_to_the_session_s_user(server: Server) -> None:
    """Regression: once sessions ran as host uids of their own, uploads (written
    by the server) stayed the server's, so the code could not change, replace or
    delete what it was given, nor write into uploaded folders."""
    session_id = server.create()
    try:
        with server.client() as client:
            url = f"/v1/sessions/{session_id}/files/given/deep/in.txt"
            assert client.put(url, content=b"one\n").status_code == 201
        code = (
            "import os\n"
            "open('given/deep/in.txt', 'a').write('two\\n')\n"
            "open('given/deep/new.txt', 'w').write('x')\n"
            "os.remove('given/deep/new.txt')\n"
            "print(open('given/deep/in.txt').read(), end='')\n"
            "os.remove('given/deep/in.txt'); os.rmdir('given/deep'); os.rmdir('given')\n"
            "print('cleaned')\n"
        )
        assert output(server.execute(session_id, code)) == "one\ntwo\ncleaned\n"
    finally:
        server.delete(session_id)


def test_paths_deeper_than_the_limit_are_refused(server: Server) -> None:
    """Regression: an upload to a/a/.../a 3,000 levels deep made a tree that the
    server's recursive cleanup could not remove."""
    session_id = server.create()
    try:
        with server.client() as client:
            deep = "/".join(["a"] * 65) + "/f.txt"
            response = client.put(f"/v1/sessions/{session_id}/files/{deep}", content=b"x")
            assert response.status_code == 400, response.text
            assert response.json()["error"]["code"] in ("bad_path", "unsafe_path")
            fine = "/".join(["a"] * 10) + "/f.txt"
            assert (
                client.put(f"/v1/sessions/{session_id}/files/{fine}", content=b"x").status_code
                == 201
            )
    finally:
        server.delete(session_id)
