"""Attacks through E2B's files (envd's ``/files`` and ``filesystem.Filesystem``):
a second door into the same sandbox, held as the lmc API holds its own.

The host serves the sandbox's home only, reached through held descriptors:
``..`` and paths outside ``/home/user`` are refused; a link the sandbox's code
plants (to ``/etc``, to another sandbox's files), or swaps in while calls run,
is never followed, for reading, writing, listing, moving or watching; uploads
are held to the limits; a watcher belongs to its own sandbox; a watch of ``/``
is refused; malformed requests are 4xx, never a 500.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import secrets
import select
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from e2b import InvalidArgumentException, SandboxException
from e2b_code_interpreter import Sandbox

from tests.integration.e2b.sdk_env import E2B_TOKEN, point_sdks_at, sdk_sandbox
from tests.integration.service.server import Server, running_server
from tests.security.e2b_door import create, wait_until
from tests.security.harness import serve_as, temporary_account

pytestmark = pytest.mark.timeout(300)

_PLANTED = f"/tmp/lmc-e2b-files-{secrets.token_hex(6)}"
OUTSIDE = [
    "/etc/passwd",
    # an id that does not change with the name: each test worker (pytest -n) collects it
    pytest.param(_PLANTED, id="/tmp/lmc-e2b-files-planted"),
    "/",
    "/home",
    "/home/userx/a",
    "/run/control",
    "/proc/1/environ",
]
DOTDOT = ["../x", "../../etc/passwd", "/home/user/../../etc/passwd", "d/../../x", "a/.."]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    args = ("--pool-size", "1", "--max-upload-bytes", "1M", "--disk", "16M")
    with running_server(*args, token=E2B_TOKEN) as server:
        yield server


@pytest.fixture
def env(server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    return point_sdks_at(server, monkeypatch)


@pytest.fixture
def sbx(env: Server) -> Iterator[Sandbox]:
    with sdk_sandbox(Sandbox) as sandbox:
        yield sandbox


def _run(sbx: Sandbox, code: str) -> str:
    """Run Python ``code`` in the sandbox (its own code, as an attacker writes it)."""
    execution = sbx.run_code(code)
    assert execution.error is None, execution.error
    return "".join(execution.logs.stdout)


def _door(sbx: Sandbox) -> dict[str, str]:
    """The headers of the sandbox's traffic, as the SDK sends them."""
    sent = {"E2b-Sandbox-Id": sbx.sandbox_id, "E2b-Sandbox-Port": "49983"}
    token = sbx._envd_access_token
    if token:
        sent["X-Access-Token"] = token
    return sent


def _rpc(server: Server, sbx: Sandbox, method: str, body: bytes, **headers: str) -> httpx.Response:
    sent = {**_door(sbx), "content-type": "application/json", **headers}
    return httpx.post(
        f"{server.url}/filesystem.Filesystem/{method}", content=body, headers=sent, timeout=60
    )


def _refused(call: object, *args: object) -> Exception:
    with pytest.raises((SandboxException, InvalidArgumentException)) as caught:
        call(*args)  # type: ignore[operator]
    assert "500" not in str(caught.value)
    return caught.value


@pytest.mark.parametrize("path", OUTSIDE + DOTDOT)
def test_paths_outside_the_home_are_refused_everywhere(sbx: Sandbox, path: str) -> None:
    files = sbx.files
    files.write("src.txt", "mine")
    _refused(files.read, path)
    _refused(files.write, path, "pwned")
    _refused(files.list, path)
    _refused(files.get_info, path)
    _refused(files.make_dir, path)
    _refused(files.remove, path)
    _refused(files.rename, "src.txt", path)
    _refused(files.watch_dir, path)
    assert files.read("src.txt") == "mine"
    assert not Path(_PLANTED).exists()


def test_nothing_acts_as_root(sbx: Sandbox) -> None:
    for call in (
        lambda: sbx.files.write("as_root.txt", "x", user="root"),
        lambda: sbx.files.read("as_root.txt", user="root"),
        lambda: sbx.files.list("/home/user", user="root"),
        lambda: sbx.files.make_dir("as_root", user="root"),
    ):
        with pytest.raises(InvalidArgumentException):
            call()
    assert not sbx.files.exists("as_root.txt") and not sbx.files.exists("as_root")


def _answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 answer read off ``sock`` (its status, headers and body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        assert piece, f"the connection ended inside an answer: {data!r}"
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    while len(body) < int(headers.get("content-length", "0")):
        piece = sock.recv(65536)
        assert piece, f"the connection ended inside an answer's body: {body!r}"
        body += piece
    return int(lines[0].split()[1]), headers, body


@pytest.mark.parametrize(
    ("query", "status"),
    [("username=root&path=as_root.txt", 400), ("path=..%2Fx", 400), ("path=x", 502)],
    ids=["as-root", "dotdot", "sandbox-gone"],
)
def test_a_refused_upload_is_answered_after_its_body(
    server: Server, sbx: Sandbox, query: str, status: int
) -> None:
    """E2B's Python SDK (reqwest) often breaks off reading an answer that comes
    while it still sends the upload: ``httpx.ReadError`` ("error reading a body
    from connection") instead of the refusal, seen under load for ``user="root"``.
    As envd, the server answers once the body has come, and keeps the connection."""
    door = _door(sbx)
    if status == 502:
        door["E2b-Sandbox-Id"] = "gone" + door["E2b-Sandbox-Id"][4:]
    body = b"x" * 100_000
    head = f"POST /files?{query} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in door.items())
    head += f"Content-Type: application/octet-stream\r\nContent-Length: {len(body)}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(head.encode() + body[:1000])
        # The old server answered within milliseconds of the headers.
        early, _, _ = select.select([sock], [], [], 1.0)
        assert not early, f"answered before the body came: {sock.recv(4096)!r}"
        sock.sendall(body[1000:])
        got, headers, text = _answer(sock)
        assert got == status, text
        assert headers.get("connection") != "close", headers
        # The connection serves the next request.
        health = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        health += "".join(f"{name}: {value}\r\n" for name, value in _door(sbx).items())
        sock.sendall(health.encode() + b"\r\n")
        assert _answer(sock)[0] == 204
    assert not sbx.files.exists("as_root.txt") and not sbx.files.exists("x")


def test_a_refused_upload_too_large_to_read_closes_after_its_answer(
    server: Server, sbx: Sandbox
) -> None:
    head = f"POST /files?username=root&path=big HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in _door(sbx).items())
    head += f"Content-Type: application/octet-stream\r\nContent-Length: {8 << 20}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(head.encode())
        # More than the server reads of a refused body (1 MiB), then nothing more.
        sock.sendall(b"x" * ((1 << 20) + (64 << 10)))
        got, headers, text = _answer(sock)
        assert (got, headers.get("connection")) == (400, "close"), (got, headers, text)
        sock.settimeout(30)
        try:
            rest = sock.recv(65536)
        except ConnectionResetError:
            rest = b""
        assert rest == b"", rest


def test_a_link_to_etc_planted_by_the_code_is_never_followed(sbx: Sandbox) -> None:
    _run(sbx, "import os; os.symlink('/etc', 'etc'); os.symlink('/etc/passwd', 'pw')")
    files = sbx.files
    # It is there, and it is a link: what a naive host (open(home + path)) would follow.
    assert files.get_info("etc").symlink_target == "/etc"
    passwd = Path("/etc/passwd").read_bytes()
    for path in ("etc/passwd", "pw", "/home/user/etc/hostname"):
        error = _refused(files.read, path)
        assert "root:" not in str(error)
    _refused(files.write, "etc/lmc-pwned", "x")
    _refused(files.write, "pw", "x")
    _refused(files.list, "etc")
    _refused(files.watch_dir, "etc")
    _refused(files.make_dir, "etc/sub")
    _refused(files.rename, "pw", "moved")
    assert not Path("/etc/lmc-pwned").exists()
    assert Path("/etc/passwd").read_bytes() == passwd
    # Listing the home shows the links as links, and removing one removes the link.
    kinds = {entry.name: entry.type.value for entry in files.list("/home/user")}
    assert kinds["etc"] == kinds["pw"] == "symlink"
    files.remove("etc")
    assert not files.exists("etc")
    assert Path("/etc/passwd").read_bytes() == passwd


def test_a_link_into_another_sandbox_is_never_followed(server: Server, sbx: Sandbox) -> None:
    other = Sandbox.create(timeout=120)
    try:
        name, secret = f"theirs-{secrets.token_hex(6)}.txt", f"secret-{secrets.token_hex(6)}"
        other.files.write(name, secret)
        found = list(server.data_dir.rglob(name))
        assert len(found) == 1, found
        _run(
            sbx,
            f"import os; os.symlink({str(found[0])!r}, 'theirs');"
            f" os.symlink({str(found[0].parent)!r}, 'their_home')",
        )
        for path in ("theirs", f"their_home/{name}"):
            assert secret not in str(_refused(sbx.files.read, path))
        _refused(sbx.files.write, "their_home/planted.txt", "x")
        _refused(sbx.files.list, "their_home")
        assert not other.files.exists("planted.txt")
        assert other.files.read(name) == secret
    finally:
        other.kill()


def test_a_folder_swapped_for_a_link_mid_call_is_never_followed(sbx: Sandbox) -> None:
    setup = (
        "import os\n"
        "os.mkdir('real'); open('real/passwd', 'w').write('mine')\n"
        "os.symlink('/etc', 'link')\n"
    )
    _run(sbx, setup)
    swapper = (
        "import os, time\n"
        "end = time.time() + 60\n"
        "while time.time() < end:\n"
        "    os.rename('real', 'race'); os.rename('race', 'real')\n"
        "    os.rename('link', 'race'); os.rename('race', 'link')\n"
    )
    sbx.files.write("swap.py", swapper)
    handle = sbx.commands.run("python3 swap.py", background=True)
    seen = {"mine": 0, "refused": 0, "missing": 0}
    try:
        for _ in range(60):
            for call in (
                lambda: sbx.files.read("race/passwd"),
                lambda: [e.name for e in sbx.files.list("race")],
                lambda: sbx.files.write("race/lmc-swapped", "x"),
            ):
                try:
                    got = str(call())
                except SandboxException as exc:
                    assert "500" not in str(exc)
                    seen["missing" if "not found" in str(exc).lower() else "refused"] += 1
                    continue
                assert "root:" not in got and "shadow" not in got
                seen["mine"] += 1
    finally:
        handle.kill()
    assert not Path("/etc/lmc-swapped").exists()
    assert sum(seen.values()) == 180
    # The race ran: calls met the folder, and met the link (refused).
    assert seen["mine"] > 0 and seen["refused"] > 0, seen


def test_an_upload_over_the_limit_is_refused_and_leaves_nothing(sbx: Sandbox) -> None:
    big = b"x" * (1024 * 1024 + 1)
    for octet in (False, True):
        error = _refused(sbx.files.write, f"big-{octet}.bin", big, None, None, False, octet)
        assert "413" in str(error) or "too large" in str(error).lower()
        assert not sbx.files.exists(f"big-{octet}.bin")
    # Several files in one upload: each is held to the limit.
    many = [{"path": f"m{i}.bin", "data": b"y" * 600_000} for i in range(3)]
    sbx.files.write_files(many)
    assert sbx.files.get_info("m2.bin").size == 600_000


def test_uploads_stop_at_the_session_s_disk_limit(sbx: Sandbox) -> None:
    piece = os.urandom(1000 * 1000)
    refused: Exception | None = None
    for i in range(40):  # 40 MB into a 16 MiB disk
        try:
            sbx.files.write(f"fill/{i}.bin", piece)
        except SandboxException as exc:
            refused = exc
            break
    assert refused is not None, "40 MB went into a 16 MiB disk"
    assert "500" not in str(refused)
    assert "413" in str(refused) or "disk" in str(refused).lower(), refused
    # The sandbox still answers, and room made is room to write again.
    sbx.files.remove("fill")
    sbx.files.write("after.txt", "still here")
    assert sbx.files.read("after.txt") == "still here"


def test_an_unprivileged_server_s_measured_disk_holds_uploads_too() -> None:
    """Without root the session's disk is no mounted image: its use is measured,
    and the host's uploads count."""
    with (
        temporary_account() as account,
        serve_as(account, "--pool-size", "0", "--max-sessions", "1", "--disk", "4M") as server,
    ):
        key = "test-token-0123456789"
        made = create(server, key=key, secure=False)
        headers = {"E2b-Sandbox-Id": made["sandboxID"], "E2b-Sandbox-Port": "49983"}
        statuses = []
        for i in range(10):  # 10 MB into a 4 MiB disk
            answer = httpx.post(
                f"{server.url}/files",
                params={"path": f"fill/{i}.bin"},
                content=os.urandom(1000 * 1000),
                headers={**headers, "content-type": "application/octet-stream"},
                timeout=60,
            )
            statuses.append(answer.status_code)
            if answer.status_code != 200:
                assert answer.status_code == 413, answer.text
                assert "disk" in answer.json()["message"]
                break
        assert statuses[-1] == 413 and len(statuses) <= 5, statuses


def test_a_gzip_bomb_upload_stops_at_the_limit(server: Server, sbx: Sandbox) -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))
    assert len(bomb) < 200_000
    answer = httpx.post(
        f"{server.url}/files",
        params={"path": "bomb.bin"},
        content=bomb,
        headers={
            **_door(sbx),
            "content-type": "application/octet-stream",
            "content-encoding": "gzip",
        },
        timeout=60,
    )
    assert answer.status_code == 413, answer.text
    assert not sbx.files.exists("bomb.bin")


def test_a_folder_of_too_many_entries_is_refused_not_read_whole(sbx: Sandbox) -> None:
    # Hard links of one file: entries that take no inode of the session's small disk.
    code = (
        "import os\n"
        "os.mkdir('crowd'); open('crowd/0', 'w').close()\n"
        "for i in range(1, 10_001): os.link('crowd/0', f'crowd/{i}')\n"
    )
    _run(sbx, code)
    with pytest.raises(InvalidArgumentException) as caught:
        sbx.files.list("crowd")
    assert "10000 entries" in str(caught.value)
    with pytest.raises(InvalidArgumentException):
        sbx.files.list("/home/user", depth=2)
    assert len(sbx.files.list("/home/user")) >= 1


def test_a_watcher_is_its_own_sandbox_s(server: Server, sbx: Sandbox) -> None:
    other = Sandbox.create(timeout=120)
    try:
        sbx.files.make_dir("watched")
        created = _rpc(server, sbx, "CreateWatcher", b'{"path":"watched"}')
        watcher = created.json()["watcherId"]
        body = json.dumps({"watcherId": watcher}).encode()
        answer = _rpc(server, other, "GetWatcherEvents", body)
        assert (answer.status_code, answer.json()["code"]) == (404, "not_found")
        answer = _rpc(server, other, "RemoveWatcher", body)
        assert answer.status_code == 404
        assert _rpc(server, sbx, "RemoveWatcher", body).status_code == 200
    finally:
        other.kill()


def _envelopes(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    while len(data) >= 5:
        flags, size = struct.unpack(">BI", data[:5])
        out.append((flags, data[5 : 5 + size]))
        data = data[5 + size :]
    return out


def _inotify_fds(server: Server) -> int:
    folder = f"/proc/{server.process.pid}/fd"
    count = 0
    for name in os.listdir(folder):
        try:
            count += os.readlink(f"{folder}/{name}") == "anon_inode:inotify"
        except OSError:
            continue
    return count


def test_no_watch_outlives_its_sandbox(server: Server, env: Server) -> None:
    doomed = Sandbox.create(timeout=120)
    before, held = _inotify_fds(server), 0
    try:
        doomed.files.make_dir("w")
        for _ in range(3):
            assert _rpc(server, doomed, "CreateWatcher", b'{"path":"w"}').status_code == 200
        body = b'{"path":"w"}'
        headers = {**_door(doomed), "content-type": "application/connect+json"}
        with httpx.stream(
            "POST",
            f"{server.url}/filesystem.Filesystem/WatchDir",
            content=struct.pack(">BI", 0, len(body)) + body,
            headers=headers,
            timeout=60,
        ) as stream:
            chunks = stream.iter_bytes()
            first = next(chunks)
            assert first[:1] == b"\x00" and b"start" in first
            held = _inotify_fds(server)
            assert held >= before + 4
            doomed.kill()
            rest = b"".join(chunks)  # the stream ends with its sandbox
        envelopes = _envelopes(first + rest)
        assert envelopes[-1][0] == 2, envelopes
    finally:
        doomed.kill()
    # (A pool refill may hold one of its own for a moment: four fewer, at least.)
    wait_until(lambda: _inotify_fds(server) <= held - 4, 30, "every watch closed")


def test_watches_are_bounded(server: Server, sbx: Sandbox) -> None:
    sbx.files.make_dir("w")
    made = [_rpc(server, sbx, "CreateWatcher", b'{"path":"w"}') for _ in range(9)]
    assert [m.status_code for m in made[:8]] == [200] * 8
    assert (made[8].status_code, made[8].json()["code"]) == (429, "resource_exhausted")


def test_the_server_s_watches_are_bounded(server: Server, env: Server) -> None:
    sandboxes = [Sandbox.create(timeout=120) for _ in range(5)]
    try:
        statuses = []
        for each in sandboxes:
            each.files.make_dir("w")
            for _ in range(8):
                statuses.append(_rpc(server, each, "CreateWatcher", b'{"path":"w"}').status_code)
        assert statuses.count(200) <= 32 and statuses.count(429) >= 8, statuses
    finally:
        for each in sandboxes:
            each.kill()
    # Ended with their sandboxes: watches can be made again.
    again = Sandbox.create(timeout=120)
    try:
        again.files.make_dir("w")
        assert _rpc(server, again, "CreateWatcher", b'{"path":"w"}').status_code == 200
    finally:
        again.kill()


def test_a_watch_of_the_root_is_refused(server: Server, sbx: Sandbox) -> None:
    for path in ("/", "/etc", "/proc", "/home/user/.."):
        body = json.dumps({"path": path, "recursive": True}).encode()
        answer = _rpc(server, sbx, "CreateWatcher", body)
        assert answer.status_code in (400, 403), answer.text
        envelope = struct.pack(">BI", 0, len(body)) + body
        streamed = _rpc(
            server,
            sbx,
            "WatchDir",
            envelope,
            **{"content-type": "application/connect+json"},
        )
        flags, size = struct.unpack(">BI", streamed.content[:5])
        assert flags == 2
        assert json.loads(streamed.content[5 : 5 + size])["error"]["code"] in (
            "permission_denied",
            "invalid_argument",
        )


@pytest.mark.parametrize(
    ("method", "body", "headers"),
    [
        ("Stat", b"{", {}),
        ("Stat", b'{"path": 7}', {}),
        ("ListDir", b'{"path": "x\\u0000y"}', {}),
        ("Stat", b"\xff" * 100, {"content-type": "application/proto"}),
        ("Stat", b'{"path": "' + b"a/" * 5000 + b'"}', {}),
        ("MakeDir", b'{"path": "/home/user"}', {}),
        ("Remove", b'{"path": "/home/user"}', {}),
        (
            "Stat",
            b'{"path": "a"}',
            {"authorization": "Basic " + base64.b64encode(b"admin:").decode()},
        ),
        ("Stat", b'{"path": "a"}', {"authorization": "Basic !!!"}),
        ("Stat", b'{"path": "a"}', {"connect-timeout-ms": "-1"}),
    ],
    ids=[
        "bad-json",
        "wrong-type",
        "nul",
        "bad-proto",
        "too-long",
        "mkdir-home",
        "remove-home",
        "other-user",
        "bad-basic",
        "bad-timeout",
    ],
)
def test_malformed_rpcs_are_4xx(
    server: Server, sbx: Sandbox, method: str, body: bytes, headers: dict[str, str]
) -> None:
    answer = _rpc(server, sbx, method, body, **headers)
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.json()["code"] in ("invalid_argument", "not_found", "permission_denied")


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("multipart/form-data; boundary=xyz", b"--xyz\r\nnot a header\r\n\r\n"),
        ("multipart/form-data", b"--xyz--"),
        (
            "multipart/form-data; boundary=xyz",
            b"--xyz\r\nContent-Disposition: form-data; "
            b'name="file"; filename="../../etc/x"\r\n\r\nx\r\n--xyz--\r\n',
        ),
        ("application/octet-stream", b"no path"),
    ],
)
def test_malformed_uploads_are_4xx(
    server: Server, sbx: Sandbox, content_type: str, body: bytes
) -> None:
    answer = httpx.post(
        f"{server.url}/files",
        content=body,
        headers={**_door(sbx), "content-type": content_type},
        timeout=60,
    )
    assert 400 <= answer.status_code < 500, answer.text
    assert not Path("/etc/x").exists()
