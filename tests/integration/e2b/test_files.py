"""E2B's ``sandbox.files`` against a real ``lmc serve``: the current SDK in this
process (sync, and async for the streamed watch), and the older one (e2b 2.45,
e2b-code-interpreter 2.9) in its own interpreter, both unchanged."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from e2b import FileNotFoundException, FilesystemEventType, FileType
from e2b_code_interpreter import AsyncSandbox, Sandbox

from tests.integration.e2b.sdk_env import old_sdk_python, run_sdk_script
from tests.integration.service.server import Server

pytestmark = pytest.mark.timeout(300)


def test_write_and_read_text_and_bytes(sandbox: Sandbox) -> None:
    info = sandbox.files.write("notes.txt", "héllo\n")
    assert (info.name, info.path, info.type) == ("notes.txt", "/home/user/notes.txt", FileType.FILE)
    assert sandbox.files.read("/home/user/notes.txt") == "héllo\n"
    data = bytes(range(256)) * 100
    sandbox.files.write("/home/user/bin/data.bin", data)
    assert bytes(sandbox.files.read("bin/data.bin", format="bytes")) == data
    # The code in the sandbox sees the same file, at the same path.
    execution = sandbox.run_code("print(open('/home/user/notes.txt').read(), end='')")
    assert "".join(execution.logs.stdout) == "héllo\n"


def test_write_files_several_at_once_and_as_a_stream(sandbox: Sandbox) -> None:
    written = sandbox.files.write_files(
        [{"path": "many/a.txt", "data": "A"}, {"path": "/home/user/many/b/c.txt", "data": b"C"}]
    )
    assert [w.path for w in written] == ["/home/user/many/a.txt", "/home/user/many/b/c.txt"]
    assert sandbox.files.read("many/b/c.txt") == "C"
    # An iterable is uploaded as application/octet-stream (envd 0.5.7).
    sandbox.files.write("streamed.txt", iter([b"one ", b"two"]))
    assert sandbox.files.read("streamed.txt") == "one two"
    sandbox.files.write("zipped.txt", "compressed", gzip=True)
    assert sandbox.files.read("zipped.txt") == "compressed"


def test_list_with_depth_exists_and_info(sandbox: Sandbox) -> None:
    for path in ("tree/sub1/sub1_1", "tree/sub2"):
        assert sandbox.files.make_dir(path) is True
    sandbox.files.write("tree/file.txt", "x")
    assert [e.name for e in sandbox.files.list("tree")] == ["file.txt", "sub1", "sub2"]
    deep = sandbox.files.list("tree", depth=2)
    assert [e.path for e in deep] == [
        "/home/user/tree/file.txt",
        "/home/user/tree/sub1",
        "/home/user/tree/sub1/sub1_1",
        "/home/user/tree/sub2",
    ]
    assert [e.type for e in deep] == [FileType.FILE, FileType.DIR, FileType.DIR, FileType.DIR]
    info = sandbox.files.get_info("tree/file.txt")
    assert (info.size, info.mode, info.permissions, info.owner) == (1, 0o644, "-rw-r--r--", "user")
    assert sandbox.files.get_info("tree").permissions == "drwxr-xr-x"
    assert sandbox.files.exists("tree/file.txt") and not sandbox.files.exists("tree/none")
    with pytest.raises(FileNotFoundException):
        sandbox.files.get_info("tree/none")


def test_make_dir_rename_and_remove(sandbox: Sandbox) -> None:
    assert sandbox.files.make_dir("made/deep") is True
    assert sandbox.files.make_dir("made/deep") is False
    sandbox.files.write("made/old.txt", "content")
    moved = sandbox.files.rename("made/old.txt", "/home/user/made/deep/new.txt")
    assert moved.path == "/home/user/made/deep/new.txt"
    assert not sandbox.files.exists("made/old.txt")
    assert sandbox.files.read("made/deep/new.txt") == "content"
    sandbox.files.remove("made")
    assert not sandbox.files.exists("made")
    with pytest.raises(FileNotFoundException):
        sandbox.files.read("made/deep/new.txt")


def test_a_link_made_by_the_code_is_told_as_a_link(sandbox: Sandbox) -> None:
    sandbox.files.write("target.txt", "t")
    sandbox.run_code("import os; os.symlink('target.txt', 'link.txt')")
    info = sandbox.files.get_info("link.txt")
    assert (info.type, info.symlink_target) == (FileType.SYMLINK, "/home/user/target.txt")


def test_metadata_is_kept_with_the_file(sandbox: Sandbox) -> None:
    info = sandbox.files.write("meta.txt", "m", metadata={"author": "lmc", "stage": "one"})
    assert info.metadata == {"author": "lmc", "stage": "one"}
    assert sandbox.files.get_info("meta.txt").metadata == {"author": "lmc", "stage": "one"}
    listed = {e.name: e.metadata for e in sandbox.files.list("/home/user")}
    assert listed["meta.txt"] == {"author": "lmc", "stage": "one"}
    assert sandbox.files.rename("meta.txt", "meta2.txt").metadata == {
        "author": "lmc",
        "stage": "one",
    }
    # Set by the code itself, in the same namespace.
    sandbox.run_code("import os; os.setxattr('meta2.txt', 'user.e2b.by', b'code')")
    assert sandbox.files.get_info("meta2.txt").metadata == {
        "author": "lmc",
        "stage": "one",
        "by": "code",
    }
    # A new upload replaces it all.
    sandbox.files.write("meta2.txt", "again")
    assert sandbox.files.get_info("meta2.txt").metadata is None


def test_recursive_watch_sees_a_new_folder_and_what_is_made_in_it(sandbox: Sandbox) -> None:
    sandbox.files.make_dir("rec")
    handle = sandbox.files.watch_dir("rec", recursive=True, include_entry=True)
    try:
        sandbox.files.make_dir("rec/new")
        sandbox.files.write("rec/new/inside.txt", "content")
        events = handle.get_new_events()
    finally:
        handle.stop()
    seen = {(e.name, e.type) for e in events}
    assert ("new", FilesystemEventType.CREATE) in seen
    assert ("new/inside.txt", FilesystemEventType.WRITE) in seen
    written = next(e for e in events if e.name == "new/inside.txt")
    assert written.entry is not None and written.entry.path == "/home/user/rec/new/inside.txt"


def test_polled_watch_sees_the_code_and_the_files_calls(sandbox: Sandbox) -> None:
    sandbox.files.make_dir("watched")
    handle = sandbox.files.watch_dir("watched", recursive=True)
    try:
        sandbox.files.write("watched/by_files.txt", "1")
        sandbox.run_code(
            "import os; os.mkdir('watched/sub'); open('watched/sub/by_code.txt', 'w').write('2')"
        )
        events = handle.get_new_events()
    finally:
        handle.stop()
    seen = {(e.name, e.type) for e in events}
    assert ("by_files.txt", FilesystemEventType.CREATE) in seen
    assert ("by_files.txt", FilesystemEventType.WRITE) in seen
    assert ("sub", FilesystemEventType.CREATE) in seen


def test_streamed_watch_sees_a_file_written_by_the_code(e2b_env: Server) -> None:
    async def scenario() -> list[Any]:
        sbx = await AsyncSandbox.create(timeout=120)
        try:
            await sbx.files.make_dir("live")
            events: list[Any] = []
            arrived = asyncio.Event()

            def on_event(event: Any) -> None:
                events.append(event)
                if event.name == "from_code.txt" and event.type == FilesystemEventType.WRITE:
                    arrived.set()

            handle = await sbx.files.watch_dir("live", on_event=on_event, timeout=60)
            try:
                await sbx.run_code("open('live/from_code.txt', 'w').write('hi')")
                await asyncio.wait_for(arrived.wait(), 30)
            finally:
                await handle.stop()
            return events
        finally:
            await sbx.kill()

    events = asyncio.run(scenario())
    assert any(e.name == "from_code.txt" and e.type == FilesystemEventType.CREATE for e in events)


_OLD_SDK_SCRIPT = r"""
import json
from e2b_code_interpreter import Sandbox
out = {}
sbx = Sandbox.create(timeout=120)
try:
    f = sbx.files
    out["write"] = f.write("old.txt", "from the old SDK").path
    out["read"] = f.read("/home/user/old.txt")
    out["bytes"] = list(f.read("old.txt", format="bytes")[:4])
    out["write_files"] = [w.path for w in f.write_files(
        [{"path": "o/a.txt", "data": "a"}, {"path": "o/b/c.txt", "data": b"c"}])]
    out["list"] = [e.path for e in f.list("o", depth=2)]
    out["exists"] = [f.exists("o/a.txt"), f.exists("o/none")]
    out["info"] = [f.get_info("o/a.txt").size, f.get_info("o").type.value]
    out["make_dir"] = [f.make_dir("od"), f.make_dir("od")]
    out["rename"] = f.rename("o/a.txt", "od/a.txt").path
    handle = f.watch_dir("od")
    sbx.run_code("open('od/by_code.txt', 'w').write('x')")
    out["events"] = sorted({(e.name, e.type.value) for e in handle.get_new_events()})
    handle.stop()
    f.remove("o")
    out["removed"] = f.exists("o")
finally:
    sbx.kill()
print(json.dumps(out))
"""


def test_the_older_sdk_files(e2b_env: Server) -> None:
    out = run_sdk_script([str(old_sdk_python()), "-c", _OLD_SDK_SCRIPT], timeout=240)
    assert out["write"] == "/home/user/old.txt"
    assert out["read"] == "from the old SDK"
    assert out["bytes"] == list(b"from")
    assert out["write_files"] == ["/home/user/o/a.txt", "/home/user/o/b/c.txt"]
    assert out["list"] == ["/home/user/o/a.txt", "/home/user/o/b", "/home/user/o/b/c.txt"]
    assert out["exists"] == [True, False]
    assert out["info"] == [1, "dir"]
    assert out["make_dir"] == [True, False]
    assert out["rename"] == "/home/user/od/a.txt"
    assert ["by_code.txt", "create"] in out["events"] and ["by_code.txt", "write"] in out["events"]
    assert out["removed"] is False
