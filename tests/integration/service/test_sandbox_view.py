"""What code in a session sees of the host (nothing: its user, home and folders
are the sandbox's own), and the files API rooted where the code runs."""

from __future__ import annotations

import json

from .server import Server, final_status, output

_PROBE = """
import json, os, pwd, subprocess, sys
print(json.dumps({
    "user": pwd.getpwuid(os.getuid()).pw_name,
    "whoami": subprocess.run(["whoami"], capture_output=True, text=True).stdout.strip(),
    "home": os.environ.get("HOME"),
    "expanded": os.path.expanduser("~"),
    "cwd": os.getcwd(),
    "env": dict(os.environ),
    "path": sys.path,
    "mounts": open("/proc/self/mountinfo").read(),
    "tmp": os.access("/tmp", os.W_OK),
}))
"""


def _probe(server: Server, session_id: str) -> dict[str, object]:
    messages = server.execute(session_id, _PROBE)
    assert final_status(messages) == "ok", messages
    found: dict[str, object] = json.loads(output(messages))
    return found


def test_code_runs_as_user_in_home_user_and_sees_no_host_path(server: Server) -> None:
    """Guards the sandbox's view: the code's user is `user`, HOME and cwd are
    /home/user, and the session's host folder shows nowhere it can look."""
    session_id = server.create()
    try:
        seen = _probe(server, session_id)
        assert seen["user"] == "user" and seen["whoami"] == "user"
        assert seen["home"] == seen["expanded"] == seen["cwd"] == "/home/user"
        assert seen["tmp"] is True
        host = str(server.data_dir)
        for key in ("cwd", "env", "path"):
            assert host not in json.dumps(seen[key]), (key, seen[key])
        mounts = str(seen["mounts"]).splitlines()
        points = {line.split()[4] for line in mounts}
        assert {"/home/user", "/run/lmc", "/run/control", "/run/shared"} <= points
        # The folders only the interpreters use (their sockets, the host's control
        # files) are bound at the sandbox's own places too, as the code's are.
        assert not [point for point in points if session_id in point or host in point]
        assert f"sessions/{session_id}" not in json.dumps(seen)
    finally:
        server.delete(session_id)


def test_listing_of_the_root_shows_only_what_the_code_made(server: Server) -> None:
    """Guards the files API's root: the runtime's own files (IPython profile,
    caches, config) are kept out of the folder the client lists."""
    session_id = server.create()
    try:
        messages = server.execute(
            session_id, "import matplotlib\nopen('made.txt', 'w').write('x')\nprint('done')"
        )
        assert final_status(messages) == "ok", messages
        with server.client() as client:
            listing = client.get(f"/v1/sessions/{session_id}/list")
        assert listing.status_code == 200, listing.text
        assert [entry["name"] for entry in listing.json()["entries"]] == ["made.txt"]
    finally:
        server.delete(session_id)


def test_readme_files_walkthrough_with_a_session_cwd(server: Server) -> None:
    """Guards the README's walkthrough as written: a session made with
    "cwd":"project" reads the file uploaded as in/data.csv by that path."""
    body = {"languages": ["python", "shell"], "cwd": "project", "env": {"MODE": "test"}}
    with server.client() as client:
        created = client.post("/v1/sessions", json=body)
        assert created.status_code == 201, created.text
        session_id = created.json()["id"]
        base = f"/v1/sessions/{session_id}"
        try:
            assert output(server.execute(session_id, "print(6*7)")) == "42\n"
            put = client.put(f"{base}/files/in/data.csv", content=b"a,b\n1,2\n")
            assert put.status_code == 201, put.text
            code = (
                "import os\nos.makedirs('out', exist_ok=True)\n"
                "data = open('in/data.csv').read()\n"
                "open('out/result.png', 'w').write(data.upper())\n"
                "print(os.getcwd(), os.environ['MODE'], repr(data))"
            )
            messages = server.execute(session_id, code)
            assert final_status(messages) == "ok", messages
            assert output(messages) == "/home/user/project test 'a,b\\n1,2\\n'\n"
            shell = server.execute(session_id, "cat in/data.csv", language="shell")
            assert "1,2" in output(shell), shell
            got = client.get(f"{base}/files/out/result.png")
            assert got.status_code == 200 and got.content == b"A,B\n1,2\n"
            listed = client.get(f"{base}/list", params={"path": "in"})
            assert [e["name"] for e in listed.json()["entries"]] == ["data.csv"]
            assert client.get(f"{base}/stat", params={"path": "in/data.csv"}).json()["size"] == 8
            made = client.post(f"{base}/mkdir", json={"path": "out/plots", "parents": True})
            assert made.status_code == 201, made.text
            move = {"source": "in/data.csv", "destination": "archive/data.csv"}
            assert client.post(f"{base}/move", json=move).status_code == 200
            assert (
                client.delete(f"{base}/files/out", params={"recursive": "true"}).status_code == 204
            )
            after = server.execute(
                session_id,
                "import os\nprint(sorted(os.listdir('.')), os.path.exists('archive/data.csv'))",
            )
            assert output(after) == "['archive', 'in'] True\n", after
        finally:
            client.delete(base)


def test_a_cwd_swapped_for_a_link_is_refused_by_the_files_api(server: Server) -> None:
    """Guards the files API's root: the session's cwd is walked from the working
    directory like any path, so a link the code put in its place is not followed."""
    session_id = server.create(cwd="project")
    base = f"/v1/sessions/{session_id}"
    try:
        swap = "import os, shutil\nos.chdir('..')\nshutil.rmtree('project')\nos.symlink('/etc', 'project')"
        assert final_status(server.execute(session_id, swap)) == "ok"
        with server.client() as client:
            for response in (
                client.get(f"{base}/files/passwd"),
                client.get(f"{base}/list"),
                client.put(f"{base}/files/planted", content=b"x"),
            ):
                assert response.status_code == 400, response.text
                assert response.json()["error"]["code"] == "unsafe_path", response.text
    finally:
        server.delete(session_id)
