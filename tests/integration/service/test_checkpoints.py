"""Checkpoints, rollback and fork of a session on a real ``lmc serve``: with
bubblewrap (the frozen copy in the sandbox, the sandbox handed to the revived
kernel) and without (``--no-sandbox``: the session's cgroup, rlimits and folders
still apply, and the tests can reach the frozen process). A fork carries the
state by value and works under both."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from lmc_runtime.errors import CheckpointNotFound, CheckpointsUnsupported
from lmc_runtime.messages import Message
from lmc_runtime.remote import RemoteComputer

from .server import TOKEN, Server, output, running_server


@pytest.fixture(scope="module")
def plain() -> Iterator[Server]:
    """A server without bubblewrap, at most 2 checkpoints a session."""
    with running_server(
        "--no-sandbox", "--pool-size", "0", "--max-sessions", "4", "--max-checkpoints", "2"
    ) as running:
        yield running


@pytest.fixture(scope="module")
def boxed() -> Iterator[Server]:
    """A server with bubblewrap."""
    with running_server("--pool-size", "0", "--max-sessions", "4") as running:
        yield running


def _run(server: Server, session: str, code: str) -> str:
    return _own(output(server.execute(session, code)))


def _own(text: str) -> str:
    """``text`` without the runtime's notes."""
    return "".join(line for line in text.splitlines(True) if not line.startswith("[lmc]"))


def _all_text(messages: list[dict[str, object]]) -> str:
    return "".join(str(m.get("content")) for m in messages if isinstance(m.get("content"), str))


def test_rollback_restores_variables_and_files(plain: Server) -> None:
    session = plain.create()
    try:
        _run(plain, session, "x = {'a': [1, 2, 3]}\nopen('kept.txt', 'w').write('before')")
        with plain.client() as client:
            made = client.post(f"/v1/sessions/{session}/checkpoints")
            assert made.status_code == 201, made.text
            checkpoint = made.json()
            assert set(checkpoint) >= {"id", "created_at", "bytes"}
            assert checkpoint["file_bytes"] == len("before")
            _run(plain, session, "del x\nimport os\nos.remove('kept.txt')\nopen('new.txt','w')")
            assert "gone" in _run(plain, session, "print('x' in dir() and 'here' or 'gone')")
            back = client.post(
                f"/v1/sessions/{session}/rollback", json={"checkpoint": checkpoint["id"]}
            )
            assert back.status_code == 200, back.text
            got = _run(
                plain, session, "import os\nprint(x, open('kept.txt').read(), os.listdir('.'))"
            )
            assert "{'a': [1, 2, 3]} before ['kept.txt']" in got
            listed = client.get(f"/v1/sessions/{session}/checkpoints").json()["checkpoints"]
            assert [c["id"] for c in listed] == [checkpoint["id"]] and listed[0]["alive"]
            dropped = client.delete(f"/v1/sessions/{session}/checkpoints/{checkpoint['id']}")
            assert dropped.status_code == 204
            again = client.post(
                f"/v1/sessions/{session}/rollback", json={"checkpoint": checkpoint["id"]}
            )
            assert again.status_code == 404 and again.json()["error"]["code"] == (
                "checkpoint_not_found"
            )
    finally:
        plain.delete(session)


def test_too_many_checkpoints_is_a_typed_429(plain: Server) -> None:
    session = plain.create()
    try:
        with plain.client() as client:
            for _ in range(2):
                assert client.post(f"/v1/sessions/{session}/checkpoints").status_code == 201
            third = client.post(f"/v1/sessions/{session}/checkpoints")
            assert third.status_code == 429, third.text
            assert third.json()["error"]["code"] == "too_many_checkpoints"
    finally:
        plain.delete(session)


def test_busy_session_refuses_checkpoint_and_fork(plain: Server) -> None:
    session = plain.create()
    try:
        started = threading.Event()

        def long_run() -> None:
            started.set()
            plain.execute(session, "import time\nprint('on', flush=True)\ntime.sleep(4)")

        runner = threading.Thread(target=long_run)
        runner.start()
        try:
            assert started.wait(10)
            with plain.client() as client:
                for _ in range(100):  # bounded: until the session says it is busy
                    if client.get(f"/v1/sessions/{session}").json()["state"] == "busy":
                        break
                    threading.Event().wait(0.05)
                for path in ("checkpoints", "fork"):
                    refused = client.post(f"/v1/sessions/{session}/{path}")
                    assert refused.status_code == 409, refused.text
                    assert refused.json()["error"]["code"] == "busy"
        finally:
            runner.join(30)
    finally:
        plain.delete(session)


def _frozen_pids(kernel: int) -> list[int]:
    """The processes running the kernel's command line other than the kernel."""
    with open(f"/proc/{kernel}/cmdline", "rb") as own:
        line = own.read()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != kernel:
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as other:
                    if other.read() == line:
                        found.append(int(entry))
            except OSError:
                continue
    return found


def test_checkpoint_whose_process_died_is_gone(plain: Server) -> None:
    session = plain.create()
    try:
        kernel = int(_run(plain, session, "import os\nprint(os.getpid())"))
        with plain.client() as client:
            checkpoint = client.post(f"/v1/sessions/{session}/checkpoints").json()
            frozen = _frozen_pids(kernel)
            assert len(frozen) == 1, frozen
            os.kill(frozen[0], signal.SIGKILL)
            for _ in range(100):  # bounded: until the listing sees it ended
                listed = client.get(f"/v1/sessions/{session}/checkpoints").json()
                if not listed["checkpoints"][0]["alive"]:
                    break
                threading.Event().wait(0.05)
            assert not listed["checkpoints"][0]["alive"]
            back = client.post(
                f"/v1/sessions/{session}/rollback", json={"checkpoint": checkpoint["id"]}
            )
            assert back.status_code == 410, back.text
            assert back.json()["error"]["code"] == "checkpoint_gone"
            assert _run(plain, session, "print(1 + 1)") == "2\n"
    finally:
        plain.delete(session)


def test_fork_is_independent_and_isolated(plain: Server) -> None:
    parent = plain.create()
    child = ""
    try:
        code = (
            "import json\nclass Point:\n    def __init__(self, x): self.x = x\n"
            "def double(v): return 2 * v\np = Point(21)\ndata = {'k': list(range(5))}\n"
            "gen = (i for i in range(3))\nopen('shared.txt', 'w').write('parent')"
        )
        _run(plain, parent, code)
        with plain.client() as client:
            forked = client.post(f"/v1/sessions/{parent}/fork")
            assert forked.status_code == 201, forked.text
            child = forked.json()["id"]
            assert child != parent
        first = plain.execute(child, "print(double(p.x), data['k'][-1], json.dumps(1))")
        assert _own(output(first)) == "42 4 1\n"
        assert f"fork of {parent}" in _all_text(first) and "gen (generator)" in _all_text(first)
        assert _run(plain, child, "print(open('shared.txt').read())") == "parent\n"
        # Later changes on either side stay there.
        _run(plain, parent, "p.x = 1\nopen('later.txt', 'w').write('x')")
        _run(plain, child, "data['k'] = []")
        got = _run(plain, child, "import os\nprint(p.x, os.path.exists('later.txt'))")
        assert got == "21 False\n"
        assert _run(plain, parent, "print(data['k'])") == "[0, 1, 2, 3, 4]\n"
        assert not any(Path(plain.data_dir).rglob(".lmc-fork-*"))
    finally:
        plain.delete(parent)
        if child:
            plain.delete(child)


def test_sandboxed_rollback_restores_state_and_files_and_fork_works(boxed: Server) -> None:
    parent = boxed.create()
    child = ""
    try:
        _run(boxed, parent, "secret = 'mine'\nopen('f.txt', 'w').write('data')")
        with boxed.client() as client:
            made = client.post(f"/v1/sessions/{parent}/checkpoints")
            assert made.status_code == 201, made.text
            checkpoint = made.json()["id"]
            _run(boxed, parent, "del secret\nimport os\nos.remove('f.txt')")
            for _ in range(2):  # a revived kernel hands the sandbox on to the next one
                back = client.post(
                    f"/v1/sessions/{parent}/rollback", json={"checkpoint": checkpoint}
                )
                assert back.status_code == 200, back.text
                got = _run(boxed, parent, "print(secret, open('f.txt').read())")
                assert got == "mine data\n"
                _run(boxed, parent, "secret = 'changed'")
            # The revived kernel outlives its checkpoint.
            dropped = client.delete(f"/v1/sessions/{parent}/checkpoints/{checkpoint}")
            assert dropped.status_code == 204
            assert _run(boxed, parent, "print(secret)") == "changed\n"
            forked = client.post(f"/v1/sessions/{parent}/fork")
            assert forked.status_code == 201, forked.text
            child = forked.json()["id"]
        got = _run(boxed, child, "import os\nprint(secret, open('f.txt').read(), os.getuid())")
        assert got.split()[:2] == ["changed", "data"]
    finally:
        boxed.delete(parent)
        if child:
            boxed.delete(child)


def test_unknown_session_and_bad_body(plain: Server) -> None:
    with plain.client() as client:
        assert client.post("/v1/sessions/nope/checkpoints").status_code == 404
        session = plain.create()
        try:
            bad = client.post(f"/v1/sessions/{session}/rollback", json={"nope": 1})
            assert bad.status_code == 400
            assert isinstance(bad.json()["error"]["message"], str)
        finally:
            plain.delete(session)


def _printed(messages: Iterable[Message]) -> str:
    text = "".join(str(m.content) for m in messages if m.type == "console" and m.format == "output")
    return _own(text)


def test_remote_computer_checkpoint_rollback_fork(plain: Server) -> None:
    remote = RemoteComputer(plain.url, token=TOKEN)
    try:
        list(remote.run("python", "n = 1\nopen('a.txt', 'w').write('one')"))
        first = remote.checkpoint()
        list(remote.run("python", "n = 2\nimport os\nos.remove('a.txt')"))
        second = remote.checkpoint()
        assert [c.id for c in remote.checkpoints()] == [first, second]
        one = remote.checkpoint_info(first)
        assert (one.id, one.alive) == (first, True) and one.bytes > 0
        remote.rollback(first)
        assert _printed(remote.run("python", "print(n, open('a.txt').read())")) == "1 one\n"
        remote.rollback(second)
        assert _printed(remote.run("python", "import os\nprint(n, os.listdir('.'))")) == "2 []\n"
        remote.drop_checkpoint(second)
        with pytest.raises(CheckpointNotFound):
            remote.rollback(second)
        with pytest.raises(CheckpointNotFound):
            remote.checkpoint_info(second)
        with pytest.raises(CheckpointsUnsupported):
            remote.checkpoint("shell")
        other = remote.fork()
        try:
            assert _printed(other.run("python", "n += 40\nprint(n)")) == "42\n"
            assert _printed(remote.run("python", "print(n)")) == "2\n"
        finally:
            other.close()
    finally:
        remote.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_remote_computer_async_fork(plain: Server) -> None:
    async with RemoteComputer(plain.url, token=TOKEN) as remote:
        async for _ in remote.arun("python", "word = 'async'"):
            pass
        taken = await remote.acheckpoint()
        assert [c.id for c in await remote.acheckpoints()] == [taken]
        other = await remote.afork()
        try:
            said = [m async for m in other.arun("python", "print(word)")]
            assert _printed(said) == "async\n"
        finally:
            await other.aclose()
        await remote.adrop_checkpoint(taken)
        assert await remote.acheckpoints() == []


def test_checkpoint_past_half_the_memory_limit_is_a_typed_413(plain: Server) -> None:
    session = plain.create(limits={"memory_bytes": 512 << 20})
    try:
        with plain.client() as client:
            used = client.get(f"/v1/sessions/{session}").json()["usage"]["memory_bytes"]
            assert used is not None, "the session has no memory cgroup"
            _run(plain, session, "big = bytearray(300 << 20)")
            refused = client.post(f"/v1/sessions/{session}/checkpoints")
            assert refused.status_code == 413, refused.text
            assert refused.json()["error"]["code"] == "checkpoint_memory"
            _run(plain, session, "del big")
            assert client.post(f"/v1/sessions/{session}/checkpoints").status_code == 201
    finally:
        plain.delete(session)


def test_fork_of_a_shell_session_carries_its_files(plain: Server) -> None:
    parent = plain.create(languages=["shell"])
    child = ""
    try:
        plain.execute(parent, "echo made > made.txt", language="shell")
        with plain.client() as client:
            forked = client.post(f"/v1/sessions/{parent}/fork")
            assert forked.status_code == 201, forked.text
            child = forked.json()["id"]
            assert forked.json()["languages"] == ["shell"]
        assert output(plain.execute(child, "cat made.txt", language="shell")) == "made\n"
    finally:
        plain.delete(parent)
        if child:
            plain.delete(child)


def test_sandboxed_revived_kernel_interrupts_and_its_death_ends_the_checkpoint(
    boxed: Server,
) -> None:
    session = boxed.create()
    try:
        _run(boxed, session, "kept = 7")
        with boxed.client() as client:
            checkpoint = client.post(f"/v1/sessions/{session}/checkpoints").json()["id"]
            back = client.post(f"/v1/sessions/{session}/rollback", json={"checkpoint": checkpoint})
            assert back.status_code == 200, back.text
            stopped = boxed.execute(
                session, "import time\nwhile True: time.sleep(0.05)", timeout=1.5
            )
            assert stopped[-1]["extras"]["status"] in ("timeout", "interrupted"), stopped[-1]
            assert _run(boxed, session, "print(kept)") == "7\n"
            # The kernel dies: its sandbox, and the frozen copy in it, end with it.
            boxed.execute(session, "import os\nos._exit(3)")
            for _ in range(100):  # bounded: until the listing sees it ended
                listed = client.get(f"/v1/sessions/{session}/checkpoints").json()
                if not listed["checkpoints"][0]["alive"]:
                    break
                threading.Event().wait(0.05)
            gone = client.post(f"/v1/sessions/{session}/rollback", json={"checkpoint": checkpoint})
            assert gone.status_code == 410, gone.text
            assert gone.json()["error"]["code"] == "checkpoint_gone"
            assert _run(boxed, session, "print('fresh')") == "fresh\n"
    finally:
        boxed.delete(session)


def test_without_the_fork_server_checkpoints_are_a_typed_400() -> None:
    """A kernel bwrap started itself leads its sandbox's PID namespace: it cannot
    hand the sandbox over, so a rollback would lose the checkpoint with it."""
    with running_server("--no-fork-server", "--pool-size", "0") as server:
        session = server.create()
        with server.client() as client:
            refused = client.post(f"/v1/sessions/{session}/checkpoints")
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == "checkpoints_unsupported"
        assert "fork" in refused.json()["error"]["message"]
