"""Environments end to end: ``lmc env create`` builds a real one (ipykernel from
the package index, and a tiny project of the test's own, installed by path), a
real ``lmc serve`` runs sessions in it, over its API, ``RemoteComputer`` and
E2B's SDK; and refuses missing or broken ones with a 400.

The environment is built once for the module (ipykernel comes from the package
index the host reaches; without one the module is skipped, saying so).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lmc_runtime.remote import RemoteComputer
from tests.integration.e2b.sdk_env import E2B_TOKEN, point_sdks_at
from tests.integration.service.server import (
    CODE,
    Server,
    _running,
    final_status,
    output,
    wait_for_pool,
)

pytestmark = pytest.mark.timeout(600)

NAME = "probe"
#: What the session prints about itself: the prefix, the env's package, fastapi.
WHERE = """\
import sys, subprocess
import lmcenvprobe
try:
    import fastapi
    host = "host-visible"
except ModuleNotFoundError:
    host = "host-hidden"
shell = subprocess.run(["sh", "-c", "python -c 'import sys; print(sys.prefix)'"],
                       capture_output=True, text=True).stdout.strip()
print(sys.prefix, lmcenvprobe.MARK, host, shell)
"""


def _index_reachable() -> str | None:
    """None if the package index answers, else why not (one bounded request)."""
    try:
        httpx.get("https://pypi.org/simple/ipykernel/", timeout=10).raise_for_status()
    except httpx.HTTPError as exc:
        return f"the package index is out of reach, and ipykernel comes from it: {exc!r}"
    return None


def _probe_project(folder: Path, name: str = "lmcenvprobe") -> Path:
    """A tiny pure-Python project, installable by its path."""
    (folder / "src" / name).mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{name}"\nversion = "1.0"\n'
    )
    (folder / "src" / name / "__init__.py").write_text('MARK = "from-the-env"\n')
    return folder


def _js_project(folder: Path) -> Path:
    """A tiny node package with a command, installable by its path."""
    folder.mkdir()
    package = {"name": "lmcjsprobe", "version": "1.0.0", "bin": {"lmcjsprobe": "cli.js"}}
    (folder / "package.json").write_text(json.dumps(package))
    (folder / "index.js").write_text('module.exports = {mark: "js-from-the-env"};\n')
    (folder / "cli.js").write_text('#!/usr/bin/env node\nconsole.log("cli-from-the-env");\n')
    (folder / "cli.js").chmod(0o755)
    return folder


def lmc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lmc_runtime", *args],
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    """A data directory holding the environment ``probe`` and a broken one."""
    unreachable = _index_reachable()
    if unreachable is not None:
        pytest.skip(unreachable)
    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        os.chmod(tmp, 0o711)  # sandboxes run as host uids of their own: let them pass
        data = Path(tmp) / "data"
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text(f"{_probe_project(Path(tmp) / 'project')}\n")
        extra = _probe_project(Path(tmp) / "extra", "lmcenvextra")
        python = ["--pip", str(extra), "--requirements", str(requirements)]
        node = ["--npm", str(_js_project(Path(tmp) / "js"))] if shutil.which("npm") else []
        built = lmc("env", "create", NAME, *python, *node, "--data-dir", str(data))
        assert built.returncode == 0, built.stderr
        broken = data / "environments" / "halfway"
        broken.mkdir()
        manifest = {"name": "halfway", "python": "3.11", "created": "x", "state": "broken"}
        (broken / "lmc-environment.json").write_text(json.dumps(manifest))
        yield data


@pytest.fixture(scope="module")
def plain_server(data_dir: Path) -> Iterator[Server]:
    """``lmc serve`` on the same data directory, without a default environment."""
    with _running(data_dir, ("--pool-size", "1", "--max-sessions", "4"), E2B_TOKEN) as running:
        yield running


def _client(server: Server) -> httpx.Client:
    headers = {"Authorization": f"Bearer {E2B_TOKEN}"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=60)


def _execute(server: Server, session: str, code: str) -> list[dict[str, Any]]:
    body = {**CODE, "content": code}
    with _client(server) as client:
        response = client.post(f"/v1/sessions/{session}/execute", json=body)
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines() if line]


def _where(server: Server, session: str) -> list[str]:
    messages = _execute(server, session, WHERE)
    assert final_status(messages) == "ok", messages
    return output(messages).split()


def test_lmc_env_list_shows_it_ready_and_the_broken_one(data_dir: Path) -> None:
    listed = lmc("env", "list", "--data-dir", str(data_dir))
    assert listed.returncode == 0, listed.stderr
    assert f"{NAME}: Python {sys.version_info[0]}.{sys.version_info[1]}" in listed.stdout
    assert "ready" in listed.stdout
    manifest = json.loads((data_dir / "environments" / NAME / "lmc-environment.json").read_text())
    assert [Path(p).name for p in (*manifest["pip"], *manifest["requirements"])] == [
        "extra",
        "project",
    ]
    assert manifest["state"] == "ready"
    assert "halfway: Python 3.11, no packages; x; broken: its manifest says" in listed.stdout


def test_the_default_environment_s_packages_and_not_the_host_s(data_dir: Path) -> None:
    """``lmc serve --environment``: sessions that ask for none, the pool's warm
    one first, run in it. (Its own server, stopped before the module's
    starts: one server holds a data directory.)"""
    args = ("--environment", NAME, "--pool-size", "1", "--max-sessions", "4")
    with _running(data_dir, args, E2B_TOKEN) as server, _client(server) as client:
        wait_for_pool(server)
        created = client.post("/v1/sessions", json={})
        assert created.status_code == 201, created.text
        assert (created.json()["pooled"], created.json()["environment"]) == (True, NAME)
        prefix, mark, host, shell = _where(server, created.json()["id"])
    root = str(data_dir / "environments" / NAME)
    assert (prefix, mark, host, shell) == (root, "from-the-env", "host-hidden", root)


def test_serve_refuses_a_default_environment_that_is_missing(data_dir: Path) -> None:
    refused = lmc("serve", "--data-dir", str(data_dir), "--environment", "nowhere", "--no-auth")
    assert refused.returncode != 0
    assert "--environment: no environment 'nowhere'" in refused.stderr, refused.stderr


def test_a_session_asks_for_the_environment_by_name(plain_server: Server, data_dir: Path) -> None:
    """On a server whose own sessions see its Python (fastapi, which it runs on,
    imports there), a session asking for the environment sees only the
    environment's; the server forks its own kernels from a zygote of its own
    Python (as root), and none of those serves the environment's session."""
    with _client(plain_server) as client:
        own = client.post("/v1/sessions", json={}).json()["id"]
        answer = client.post("/v1/sessions", json={"environment": NAME}).json()
        asked = answer["id"]
    # The first session of an environment starts cold; its pool starts with it.
    assert (answer["environment"], answer["pooled"]) == (NAME, False)
    own_messages = _execute(plain_server, own, "import fastapi, sys; print(sys.prefix)")
    assert final_status(own_messages) == "ok", own_messages
    root = str(data_dir / "environments" / NAME)
    assert _where(plain_server, asked) == [root, "from-the-env", "host-hidden", root]


def test_regression_an_environment_in_use_gets_warm_sessions_of_its_own(
    plain_server: Server, data_dir: Path
) -> None:
    """Guards the pool keeping warm sessions of the default environment only: once
    an environment has been asked for, the next session of it is a warm one, and
    a warm one of that environment (never the default's)."""
    with _client(plain_server) as client:
        first = client.post("/v1/sessions", json={"environment": NAME})
        assert first.status_code == 201, first.text
        client.delete(f"/v1/sessions/{first.json()['id']}")
        wait_for_pool(plain_server, ready=2)  # the default's and the environment's
        answer = client.post("/v1/sessions", json={"environment": NAME}).json()
    assert (answer["environment"], answer["pooled"]) == (NAME, True)
    root = str(data_dir / "environments" / NAME)
    assert _where(plain_server, answer["id"]) == [root, "from-the-env", "host-hidden", root]


def test_remote_computer_sends_its_environment(plain_server: Server, data_dir: Path) -> None:
    code = "import sys, lmcenvextra; print(sys.prefix, lmcenvextra.MARK)"
    with RemoteComputer(plain_server.url, token=E2B_TOKEN, environment=NAME) as computer:
        text = "".join(str(m.content) for m in computer.run("python", code) if m.format == "output")
    assert text.split() == [str(data_dir / "environments" / NAME), "from-the-env"]


@pytest.mark.parametrize(
    ("name", "code", "said"),
    [
        (
            "nowhere",
            "unknown_environment",
            f"no environment 'nowhere': the environments are halfway, {NAME}",
        ),
        ("../etc", "unknown_environment", "no environment '../etc'"),
        (
            "halfway",
            "environment_broken",
            "the environment 'halfway' cannot be used: its manifest says it is broken",
        ),
    ],
)
def test_a_missing_or_broken_environment_is_a_400_naming_it(
    plain_server: Server, name: str, code: str, said: str
) -> None:
    with _client(plain_server) as client:
        answer = client.post("/v1/sessions", json={"environment": name})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["message"][: len(said)]) == (code, said)


def test_an_e2b_template_that_names_an_environment_runs_in_it(
    plain_server: Server, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from e2b_code_interpreter import Sandbox

    point_sdks_at(plain_server, monkeypatch)
    sandbox = Sandbox.create(template=NAME, timeout=120)
    try:
        execution = sandbox.run_code("import sys, lmcenvprobe; print(sys.prefix, lmcenvprobe.MARK)")
        assert execution.error is None, execution.error
        printed = "".join(execution.logs.stdout).split()
        assert printed == [str(data_dir / "environments" / NAME), "from-the-env"]
    finally:
        sandbox.kill()
    with pytest.raises(Exception, match="template 'nowhere' was not found"):
        Sandbox.create(template="nowhere", timeout=60)


def test_node_packages_are_on_node_path_and_their_commands_on_path(
    plain_server: Server, data_dir: Path
) -> None:
    if not (data_dir / "environments" / NAME / "node_modules").is_dir():
        pytest.skip("npm is not installed: the environment has no node packages")
    languages = ["python", "javascript", "shell"]
    with RemoteComputer(
        plain_server.url, token=E2B_TOKEN, environment=NAME, languages=languages
    ) as computer:
        required = computer.run("javascript", "console.log(require('lmcjsprobe').mark)")
        command = computer.run("shell", "lmcjsprobe")
        said = [
            "".join(str(m.content) for m in run if m.format == "output").strip()
            for run in (required, command)
        ]
    assert said == ["js-from-the-env", "cli-from-the-env"]


def test_the_environment_is_read_only_and_nothing_else_of_the_data_dir_is_seen(
    plain_server: Server, data_dir: Path
) -> None:
    root = data_dir / "environments" / NAME
    code = f"""\
import errno, os
try:
    open({str(root / "planted.py")!r}, "w")
    print("written")
except OSError as exc:
    print(errno.errorcode[exc.errno])
print(os.path.exists({str(data_dir / "environments" / "halfway")!r}),
      os.path.exists({str(data_dir / "sessions")!r}))
"""
    with _client(plain_server) as client:
        session = client.post("/v1/sessions", json={"environment": NAME}).json()["id"]
    messages = _execute(plain_server, session, code)
    assert final_status(messages) == "ok", messages
    assert output(messages).split() == ["EROFS", "False", "False"]
    assert not (root / "planted.py").exists()
