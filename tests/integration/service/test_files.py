"""File upload and download, and the paths they refuse."""

from __future__ import annotations

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
