"""``lmc serve --secret`` end to end, over the test internet: a session with a
network policy asks for two secrets (one from the server's environment, one
from a file); its shell sends the placeholders with curl; allowed.test gets the
values, other.test the placeholders. The values are nowhere in the session's
processes' memory (read from the host), the data directory (session files,
transcripts), the server's log, the API's answers or the metrics."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.internet import ALLOWED, OTHER, TestInternet
from lmc_runtime.sandbox import sandbox_available
from tests.integration.service.server import Server, output, running_server

from .scan import files_holding, memory_holds, pids_of_uids

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.skipif(os.geteuid() != 0, reason="the egress namespaces need root"),
    pytest.mark.skipif(
        not sandbox_available().available, reason=f"no sandbox: {sandbox_available().reason}"
    ),
]

FROM_ENV = "sk-env-5d4c3b2a19081726354453627180a9b8"
FROM_FILE = "sk-file-a1b2c3d4e5f60718293a4b5c6d7e8f90"
VALUES = (FROM_ENV.encode(), FROM_FILE.encode())

SCRIPT = f"""
curl -sS --max-time 30 -H "Authorization: Bearer $API_KEY" https://{ALLOWED}/with-env
curl -sS --max-time 30 -H "Authorization: Bearer $FILE_KEY" https://{ALLOWED}/with-file
curl -sS --max-time 30 -k -H "Authorization: Bearer $API_KEY" https://{OTHER}/elsewhere
curl -sS --max-time 30 -H "Authorization: Bearer $API_KEY" http://{OTHER}/plain
echo "tokens $API_KEY $FILE_KEY"
"""


@pytest.fixture(scope="module")
def server(internet: TestInternet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("secret")
    value_file = folder / "file-key"
    value_file.write_text(FROM_FILE + "\n")
    args = (
        *("--allow-network", internet.ceiling, "--egress-dns", internet.dns),
        *("--egress-ca-file", str(internet.ca_path)),
        *("--secret", f"API_KEY:{ALLOWED}", "--secret", f"FILE_KEY:{ALLOWED}@{value_file}"),
        *("--pool-size", "0", "--max-sessions", "2", "--log-level", "debug"),
    )
    with running_server(*args, env={"API_KEY": FROM_ENV}) as running:
        yield running


def processes_holding(token: bytes) -> list[int]:
    """The processes of the users (the session's own host uid) of processes whose
    environment holds ``token``: root's (the server's, which hands the variables
    over as a sandbox starts) are not the session's."""
    uids = set()
    for pid in (int(entry) for entry in os.listdir("/proc") if entry.isdigit()):
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if token in environ.read():
                    uids.add(os.stat(f"/proc/{pid}").st_uid)
        except OSError:
            continue
    return pids_of_uids(uids - {0})


def authorizations(world: TestInternet, since: tuple[int, ...], address: str) -> dict[str, Any]:
    return {e["path"]: e["authorization"] for e in world.events("request", address, since)}


def test_a_session_uses_secrets_it_never_sees(server: Server, internet: TestInternet) -> None:
    network = {"allow": [ALLOWED, OTHER]}
    session = server.create(network=network, secrets=["API_KEY", "FILE_KEY"], languages=["shell"])
    since = internet.mark()
    said = output(server.execute(session, SCRIPT, language="shell"))
    tokens = re.search(r"tokens (\S+) (\S+)", said)
    assert tokens is not None, said
    env_token, file_token = tokens.groups()
    assert file_token.startswith("lmc-secret-file-key-"), said
    assert env_token.startswith("lmc-secret-api-key-"), said
    assert said.count("hello from allowed") == 2 and said.count("hello from other") == 2, said
    allowed = authorizations(internet, since, f"{internet.allowed}:443")
    assert allowed == {"/with-env": f"Bearer {FROM_ENV}", "/with-file": f"Bearer {FROM_FILE}"}
    other = {
        **authorizations(internet, since, f"{internet.other}:443"),
        **authorizations(internet, since, f"{internet.other}:80"),
    }
    assert other == {"/elsewhere": f"Bearer {env_token}", "/plain": f"Bearer {env_token}"}

    pids = processes_holding(env_token.encode())
    held = {pid: memory_holds(pid, (env_token.encode(), *VALUES)) for pid in pids}
    assert any(env_token.encode() in found for found in held.values()), held  # the scan reads
    assert not any(set(VALUES) & found for found in held.values()), held
    assert files_holding(server.data_dir, VALUES) == []

    with server.client() as client:
        answers = [
            client.get(f"/v1/sessions/{session}").text,
            client.get("/v1/sessions").text,
            client.get("/metrics").text,
        ]
    assert "API_KEY" in answers[0]  # the variable's name, never its value
    assert not [a for a in answers if FROM_ENV in a or FROM_FILE in a]
    server.delete(session)
    assert files_holding(server.data_dir, VALUES) == []  # the transcript among them
    log = server.log()
    assert "API_KEY" in log and FROM_ENV not in log and FROM_FILE not in log


def test_remote_computer_asks_for_secrets(server: Server, internet: TestInternet) -> None:
    """RemoteComputer(secrets=[...]) gets the session placeholders the broker fills in."""
    from lmc_runtime.remote import RemoteComputer
    from tests.integration.service.server import TOKEN

    code = f'curl -sS --max-time 30 -H "Authorization: Bearer $API_KEY" https://{ALLOWED}/remote'
    code += '\necho "token $API_KEY"'
    since = internet.mark()
    with RemoteComputer(
        server.url,
        token=TOKEN,
        languages=["shell"],
        network={"allow": [ALLOWED]},
        secrets=["API_KEY"],
    ) as computer:
        said = "".join(str(m.content) for m in computer.run("shell", code) if m.format == "output")
    assert re.search(r"token lmc-secret-api-key-\S+", said), said
    assert FROM_ENV not in said
    allowed = authorizations(internet, since, f"{internet.allowed}:443")
    assert allowed == {"/remote": f"Bearer {FROM_ENV}"}


def test_unknown_secrets_are_refused(server: Server) -> None:
    with server.client() as client:
        response = client.post(
            "/v1/sessions", json={"network": {"allow": [ALLOWED]}, "secrets": ["NOPE"]}
        )
    assert response.status_code == 400, response.text
    assert "unknown secret 'NOPE'" in response.text and "API_KEY, FILE_KEY" in response.text


def test_a_server_without_the_value_does_not_start() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MISSING_KEY"}
    with tempfile.TemporaryDirectory(prefix="lmc-") as data:
        argv = [sys.executable, "-m", "lmc_runtime", "serve", "--data-dir", data]
        argv += ["--allow-network", ALLOWED, "--secret", f"MISSING_KEY:{ALLOWED}"]
        done = subprocess.run(
            argv,
            env={**env, "LMC_TOKEN": "t0ken-value-0123456789"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode != 0
    assert "no variable MISSING_KEY" in done.stderr, done.stderr
