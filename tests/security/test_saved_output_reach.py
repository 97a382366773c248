"""Attacks on ``GET /v1/sessions/{id}/outputs/{name}``: code in a session plants
names and links for it to follow, and a client asks one session for another's
saved output. The route must only ever return what the output budget saved for
the session named in the path."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.service.server import Server, final_status, output

from .attacks import FIND_WRITABLE, execute
from .harness import Account, serve_as

pytestmark = pytest.mark.timeout(300)

_SECRET = "host-secret-" + "7f3a9c"

#: Plants, in every folder the code can write, names a saved output could have:
#: plain files and links to a host file (and to the host's root).
_PLANT = (
    FIND_WRITABLE
    + r"""
import os
planted = 0
for top in writable() + ["/tmp", "/dev/shm", "/run/lmc", os.getcwd()]:
    for sub in ("", "output", "disk/output", "outputs"):
        folder = os.path.join(top, sub)
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            continue
        for name, target in (("leak.txt", "{secret_path}"), ("root.txt", "/etc/shadow")):
            try:
                os.symlink(target, os.path.join(folder, name))
                planted += 1
            except OSError:
                pass
        try:
            with open(os.path.join(folder, "plain.txt"), "w") as f:
                f.write("planted by the code")
            planted += 1
        except OSError:
            pass
print("planted", planted)
"""
)


@pytest.fixture(scope="module")
def server(account: Account) -> Iterator[Server]:
    with serve_as(account, "--pool-size", "0", "--max-sessions", "4") as running:
        yield running


def test_saved_outputs_never_follow_what_the_code_planted(
    server: Server, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Files and links the code plants under an output's name, in every folder it
    can write, are never returned by the outputs route (404), nor what they lead to."""
    secret = tmp_path_factory.mktemp("outputs-secret") / "secret.txt"
    secret.write_text(_SECRET)
    secret.chmod(0o644)
    sid = server.create(languages=["python"], limits={"output_bytes": 1000})
    try:
        planted = output(
            execute(server, sid, "python", _PLANT.replace("{secret_path}", str(secret)))
        )
        assert "planted" in planted and "planted 0" not in planted, planted
        with server.client() as client:
            for name in ("leak.txt", "root.txt", "plain.txt"):
                got = client.get(f"/v1/sessions/{sid}/outputs/{name}")
                assert got.status_code == 404, (name, got.status_code, got.text[:200])
                assert _SECRET not in got.text and "root:" not in got.text
    finally:
        server.delete(sid)


def test_one_session_s_saved_output_is_not_reached_through_another(server: Server) -> None:
    """A saved output's name asked of another session is that session's 404, and the
    owner still gets it whole."""
    owner = server.create(languages=["python"], limits={"output_bytes": 1000})
    other = server.create(languages=["python"])
    try:
        messages = server.execute(owner, "for i in range(2000):\n    print(f'secret {i:05d}')")
        assert final_status(messages) == "ok", messages
        route = next(
            m["extras"]["output_path"]
            for m in messages
            if (m.get("extras") or {}).get("status") == "truncated"
        )
        name = route.rsplit("/", 1)[1]
        with server.client() as client:
            assert client.get(route).status_code == 200
            across = client.get(f"/v1/sessions/{other}/outputs/{name}")
            assert across.status_code == 404, across.text[:200]
            assert "secret 00001" not in across.text
    finally:
        server.delete(owner)
        server.delete(other)
