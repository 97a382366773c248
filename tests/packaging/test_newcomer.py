"""The newcomer's path from the README, done from the wheel in a fresh venv: the
embedding example, ``lmc demo``, ``lmc setup`` and ``lmc serve``, the curl walkthrough
of the service's API, the ``RemoteComputer`` quickstart and the LangChain examples, each
from a folder outside the repository, its output checked against what the docs say, and
no process of it left behind once its owner is done (the server's, after SIGTERM).

The examples are read from the README and docs/ as they are written; only the server's
address and token are put in.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .newcomer import STEP_SECONDS, Census, Newcomer, Serve, Server, example, said, shell_commands
from .test_wheel import Installed
from .wheels import REPO, fresh_venv

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

#: The extras the README has a newcomer install for these steps.
EXTRAS = "serve,client,langchain"
#: Seconds a script of one short run may take to end (the README's example takes a few).
UNCLOSED_SECONDS = 60
CSV = "name,score\nada,42\n"
PNG = b"\x89PNG\r\n\x1a\n-written-by-the-session"


@pytest.fixture(scope="module")
def newcomer(wheel: Path) -> Iterator[Newcomer]:
    """The wheel with the README's extras in a venv in a fresh home, as ``pip install``
    puts it there; the steps run with that home, from its folder ``work``."""
    home = Path(tempfile.mkdtemp(prefix="lmc-nc-"))  # 0700, as a home is
    assert not home.resolve().is_relative_to(REPO)
    mark = uuid.uuid4().hex
    census = Census((f"{home}/",), mark, home / ".local/share/lmc-runtime")
    try:
        venv, outside = home / "venv", home / "work"
        outside.mkdir()
        fresh_venv(venv, f"{wheel}[{EXTRAS}]", outside)  # pip's cache reused
        yield Newcomer(Installed(wheel, venv, outside), home, mark, census)
    finally:
        census.kill_left_behind()
        # rm removes the venv's thousands of files faster than shutil.rmtree does.
        subprocess.run(["rm", "-rf", "--", str(home)], timeout=STEP_SECONDS, check=False)


@pytest.fixture(scope="module")
def server(newcomer: Newcomer) -> Iterator[Server]:
    """``lmc setup`` (as root), then ``LMC_TOKEN=$(openssl rand -hex 24) lmc serve`` on a
    free loopback port (``--port 0``, which the operations page documents)."""
    # The host step runs with the machine's own home: npm's cache is there.
    setup = subprocess.run(
        ["lmc", "setup"],
        capture_output=True,
        text=True,
        timeout=STEP_SECONDS,
        check=False,
        cwd=newcomer.installed.outside,
        env={**newcomer.env(), "HOME": os.environ.get("HOME", "/root")},
    )
    assert setup.returncode == 0, said(setup)
    token = subprocess.run(
        ["openssl", "rand", "-hex", "24"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.strip()
    serve = Serve(
        ["lmc", "serve", "--port", "0"],
        newcomer.env(LMC_TOKEN=token),
        newcomer.installed.outside,
        newcomer.home / "serve.log",
    )
    try:
        yield Server(serve, serve.wait_listening(STEP_SECONDS), token)
    finally:
        serve.stop()


def test_the_readme_embedding_example_prints_pi_then_the_final_message(newcomer: Newcomer) -> None:
    """Guards the README's library quickstart: run as a script from the wheel, it prints
    the output and then the final message, and leaves no kernel running."""
    block = example("README.md", "python", "from lmc_runtime import Computer", "math.pi")
    done = newcomer.python(block.code)
    assert done.returncode == 0, said(done)
    assert done.stdout.splitlines() == [
        "console output 3.141592653589793",
        "",
        "console active_line None",
    ], said(done)
    newcomer.census.assert_none_left("the README's embedding example")


def test_the_embedding_example_without_close_ends_and_leaves_no_kernel(
    newcomer: Newcomer,
) -> None:
    """Regression: a script that never closes its Computer (the README's example with
    ``computer = Computer()`` instead of ``with``) left its kernel running; then, once
    the kernel went with it, never ended (at exit the portal's close waited for its
    thread, already stopped). It prints the same, ends, and no interpreter lives on."""
    block = example("README.md", "python", "from lmc_runtime import Computer", "math.pi")
    opening = "with Computer() as computer:\n"
    assert opening in block.code
    head, body = block.code.split(opening)
    body = "".join(line.removeprefix("    ") for line in body.splitlines(keepends=True))
    unclosed = head + "computer = Computer()\n" + body
    done = newcomer.python(unclosed, timeout=UNCLOSED_SECONDS)
    assert done.returncode == 0, f"it did not end in {UNCLOSED_SECONDS} s\n{said(done)}"
    assert done.stdout.splitlines() == [
        "console output 3.141592653589793",
        "",
        "console active_line None",
    ], said(done)
    newcomer.census.assert_none_left("the embedding example without close")


def test_lmc_demo_runs_the_shipped_demo_and_leaves_nothing(newcomer: Newcomer) -> None:
    """Guards ``lmc demo`` right after the install: every code message is answered and
    ends as the demo means it to, and no interpreter outlives the command."""
    done = newcomer.run("lmc", "demo")
    assert done.returncode == 0, said(done)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    final = {
        m["in_reply_to"]: (m.get("extras") or {}).get("status")
        for m in replies
        if m["format"] == "active_line" and m["content"] is None
    }
    assert {"m1", "m2", "m3", "m4", "m5"} <= final.keys(), final
    failed = {key for key, status in final.items() if status != "ok" and key != "m4"}
    told = [m for m in replies if m.get("in_reply_to") in failed]  # what a failed run said
    assert final.pop("m4") == "error" and set(final.values()) == {"ok"}, (final, told)
    assert any(m["in_reply_to"] == "m1" and m["content"] == "9222500" for m in replies)
    assert any(m["in_reply_to"] == "m3" and m["type"] == "image" for m in replies)
    newcomer.census.assert_none_left("lmc demo")


def _json(step: tuple[str, int, str, str]) -> Any:
    command, status, out, err = step
    assert status == 0 and out.strip(), (command, status, out, err[-2000:])
    return json.loads(out)


def test_the_curl_walkthrough_creates_runs_restarts_and_deletes_a_session(
    newcomer: Newcomer, server: Server
) -> None:
    """Guards the service page's curl walkthrough, as written: each command says what the
    page says, and the deleted session leaves no process behind."""
    block = example("docs/service/api.md", "bash", "/v1/languages", "/restart")
    commands = shell_commands(block.code)
    created = next(n for n, c in enumerate(commands) if c.startswith("ID=$("))
    commands.insert(created + 1, 'printf %s "$ID"')  # the id it made, to check by
    steps = newcomer.walk(server, commands)
    languages = {lang["name"]: lang for lang in _json(steps[1])["languages"]}
    assert languages["python"]["available"] and languages["shell"]["available"], languages
    session_id = steps[created + 1][2]
    assert len(session_id) == 16, steps[created]
    listing = _json(next(s for s in steps if s[0].endswith("$U/v1/sessions")))
    (mine,) = [s for s in listing["sessions"] if s["id"] == session_id]
    assert (mine["cwd"], mine["env"], mine["languages"]) == (
        "project",
        ["MODE"],
        ["python", "shell"],
    )
    info = _json(next(s for s in steps if s[0].endswith("$U/v1/sessions/$ID")))
    assert info["id"] == session_id and info["usage"]["processes"] >= 1, info
    run = next(s for s in steps if "/execute" in s[0])
    assert run[1] == 0, run
    messages = [json.loads(line) for line in run[2].splitlines()]
    assert "".join(m["content"] for m in messages if m["format"] == "output") == "42\n", messages
    assert messages[-1]["format"] == "active_line" and messages[-1]["content"] is None
    assert (
        messages[-1]["extras"]["status"] == "ok" and messages[-1]["extras"]["execution_count"] == 1
    )
    for route in ("/interrupt", "/restart"):
        answer = _json(next(s for s in steps if route in s[0]))
        assert answer.get("id") == session_id, (route, answer)
    deleted = next(s for s in steps if "-X DELETE" in s[0])
    assert deleted[1:3] == (0, ""), deleted
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}
    ) as client:
        assert client.get(f"/v1/sessions/{session_id}").status_code == 404
    newcomer.census.assert_none_left("the curl walkthrough", server.serve.process.pid)


def test_the_curl_walkthrough_of_files_meets_the_code_in_its_cwd(
    newcomer: Newcomer, server: Server
) -> None:
    """Guards the files walkthrough: a file uploaded as in/data.csv is read by that path by
    code in a session made with "cwd":"project", what the code writes is downloaded, and
    each files command answers as its comment says."""
    first = shell_commands(example("docs/service/api.md", "bash", "/v1/languages", "/restart").code)
    files = shell_commands(example("docs/service/api.md", "sh", "/files/in/data.csv", "/move").code)
    create = next(c for c in first if c.startswith("ID=$("))
    delete = next(c for c in first if "-X DELETE" in c and "$U/v1/sessions/$ID" in c)
    execute = next(c for c in first if "/execute" in c)
    code = (
        "import os\nprint(open('in/data.csv').read(), end='')\n"
        "os.makedirs('out'); os.makedirs('tmp/deep')\n"
        f"_ = open('out/result.png', 'wb').write({PNG!r}), open('tmp/deep/x', 'w').write('x')\n"
    )
    content = json.dumps(code).replace("'", "'\\''")  # inside the command's single quotes
    assert '"content":"print(6*7)"' in execute
    reads = execute.replace('"content":"print(6*7)"', f'"content":{content}')
    (newcomer.installed.outside / "data.csv").write_text(CSV)
    commands = [first[0], create, files[0], files[1], reads, *files[2:], delete]
    steps = newcomer.walk(server, commands)
    upload = _json(steps[3])
    assert (upload["path"], upload["kind"], upload["size"]) == ("in/data.csv", "file", len(CSV))
    messages = [json.loads(line) for line in steps[4][2].splitlines()]
    assert "".join(m["content"] for m in messages if m["format"] == "output") == CSV, messages
    assert messages[-1]["extras"]["status"] == "ok", messages[-1]
    by_command = {command: (status, out) for command, status, out, _ in steps[5:-1]}
    download = next(c for c in by_command if "-o result.png" in c)
    assert (
        by_command[download] == (0, "")
        and (newcomer.installed.outside / "result.png").read_bytes() == PNG
    )
    removal = next(c for c in by_command if "-X DELETE" in c)
    assert by_command[removal] == (0, ""), "the recursive delete answers 204, no body"
    listing = _json(next(s for s in steps if "/list?path=in" in s[0]))
    assert listing["path"] == "in" and listing["truncated"] is False, listing
    assert [e["name"] for e in listing["entries"]] == ["data.csv"], listing
    stat = _json(next(s for s in steps if "/stat?path=in/data.csv" in s[0]))
    assert (stat["path"], stat["kind"], stat["size"]) == ("in/data.csv", "file", len(CSV))
    made = _json(next(s for s in steps if '"path":"out/plots"' in s[0]))
    assert (made["path"], made["kind"]) == ("out/plots", "directory"), made
    moved = _json(next(s for s in steps if s[0].endswith('"$S/move"')))
    assert (moved["path"], moved["kind"]) == ("archive/data.csv", "file"), moved
    assert steps[-1][1:3] == (0, ""), steps[-1]
    newcomer.census.assert_none_left("the files walkthrough", server.serve.process.pid)


def test_the_readme_remote_computer_quickstart_runs_in_the_sandbox_home(
    newcomer: Newcomer, server: Server
) -> None:
    """Guards the README's RemoteComputer quickstart: its code runs in /home/user, the
    sandbox's home, and its session's processes end when it closes."""
    block = example("README.md", "python", "from lmc_runtime.remote import RemoteComputer")
    done = newcomer.python(server.example(block.code))
    assert done.returncode == 0, said(done)
    assert done.stdout.splitlines() == [
        "console output /home/user",
        "",
        "console active_line None",
    ], said(done)
    newcomer.census.assert_none_left("the RemoteComputer quickstart", server.serve.process.pid)


def test_the_langchain_example_on_a_computer_prints_what_its_comment_says(
    newcomer: Newcomer, server: Server
) -> None:
    """Guards the integrations page's LmcTool example on a local Computer."""
    block = example(
        "docs/integrations.md", "python", "LmcTool(computer=computer", "tool.invoke(call)"
    )
    prints = "success [{'type': 'text', 'text': '42\\n'}]"
    assert f"# {prints}" in block.code, "the page's comment says what it prints"
    done = newcomer.python(block.code)
    assert done.returncode == 0, said(done)
    assert done.stdout == prints + "\n", said(done)
    newcomer.census.assert_none_left("the LangChain example", server.serve.process.pid)


def test_the_langchain_example_on_a_remote_computer_batches_its_calls(
    newcomer: Newcomer, server: Server
) -> None:
    """Guards the integrations page's LmcTool example on a RemoteComputer: both calls run,
    and the tool's description lists the session's languages as the comment shows."""
    block = example(
        "docs/integrations.md", "python", "LmcTool(computer=remote)", "tool.batch(calls)"
    )
    languages = "Languages: python (py, python3, ipython), shell (bash)."
    assert languages in block.code
    done = newcomer.python(server.example(block.code) + "print(tool.description)\n")
    assert done.returncode == 0, said(done)
    replies, description = done.stdout.splitlines()[0], done.stdout.splitlines()[-1]
    assert replies == "[[{'type': 'text', 'text': '1\\n'}], [{'type': 'text', 'text': '2\\n'}]]", (
        said(done)
    )
    assert description.endswith(languages), said(done)
    newcomer.census.assert_none_left("the remote LangChain example", server.serve.process.pid)


def test_lmc_serve_stops_on_sigterm_and_leaves_nothing(newcomer: Newcomer, server: Server) -> None:
    """Guards the end of the path: SIGTERM stops the server, which logged no error or
    traceback on the way, and no kernel, fork server or sandbox of it, nor anything the
    earlier steps started, lives on."""
    # A graceful shutdown ends with 0, or with SIGTERM re-raised once it is done (uvicorn's way).
    assert server.serve.stop() in (0, -signal.SIGTERM), server.serve.log()
    assert server.serve.troubles() == [], server.serve.log()
    newcomer.census.assert_none_left("lmc serve stopped with SIGTERM")
