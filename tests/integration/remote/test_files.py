"""Every file method of RemoteComputer, sync and async, and its typed refusals."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from lmc_runtime.errors import RemoteFileExists, RemoteFileNotFound, RemotePathError
from lmc_runtime.remote import FileInfo, RemoteComputer

from ..service.server import TOKEN, Server
from .conftest import RemoteFactory


def test_upload_download_stat_and_the_code_sees_the_file(remote: RemoteFactory) -> None:
    computer = remote()
    info = computer.upload("data.txt", b"hello\n")
    assert isinstance(info, FileInfo)
    assert (info.path, info.name, info.kind, info.size) == ("data.txt", "data.txt", "file", 6)
    assert computer.download("data.txt") == b"hello\n"
    assert computer.stat("data.txt").size == 6 and computer.stat("data.txt").mtime > 0
    replies = list(computer.run("python", "print(open('data.txt').read().upper(), end='')"))
    assert "HELLO\n" in "".join(str(m.content) for m in replies)


def test_a_file_the_code_wrote_comes_back_streamed(remote: RemoteFactory, tmp_path: Path) -> None:
    computer = remote()
    list(computer.run("python", "open('big.bin', 'wb').write(bytes(range(256)) * 4096)"))
    pieces = list(computer.download_stream("big.bin"))
    assert b"".join(pieces) == bytes(range(256)) * 4096
    assert computer.download_to("big.bin", tmp_path / "copy.bin") == 256 * 4096
    assert (tmp_path / "copy.bin").read_bytes() == bytes(range(256)) * 4096


def test_upload_from_a_file_object(remote: RemoteFactory) -> None:
    computer = remote()
    payload = b"x" * 300_000
    assert computer.upload("from-file.bin", io.BytesIO(payload)).size == len(payload)
    assert computer.download("from-file.bin") == payload


def test_mkdir_list_move_remove(remote: RemoteFactory) -> None:
    computer = remote()
    made = computer.mkdir("a/b/c", parents=True)
    assert made.kind == "directory" and made.path == "a/b/c"
    with pytest.raises(RemoteFileExists) as exists:
        computer.mkdir("a/b/c")
    assert exists.value.status == 409 and exists.value.code == "file_exists"
    assert computer.mkdir("a/b/c", parents=True).is_dir
    computer.upload("a/b/one.txt", b"1")
    computer.upload("a/b/two.txt", b"22")
    listed = computer.list("a/b")
    assert [(e.name, e.kind) for e in listed] == [
        ("c", "directory"),
        ("one.txt", "file"),
        ("two.txt", "file"),
    ]
    assert "a" in [e.name for e in computer.list()]
    with pytest.raises(RemoteFileExists):
        computer.move("a/b/one.txt", "a/b/two.txt")
    moved = computer.move("a/b/one.txt", "a/b/two.txt", overwrite=True)
    assert moved.path == "a/b/two.txt" and moved.size == 1
    with pytest.raises(RemoteFileExists) as not_empty:
        computer.remove("a")
    assert not_empty.value.code == "directory_not_empty"
    computer.remove("a/b/two.txt")
    with pytest.raises(RemoteFileNotFound):
        computer.stat("a/b/two.txt")
    computer.remove("a", recursive=True)
    assert "a" not in [e.name for e in computer.list()]


def test_refused_paths_are_typed(remote: RemoteFactory) -> None:
    computer = remote()
    for path in ("../escape", "/etc/passwd", "a/./b"):
        with pytest.raises(RemotePathError) as refused:
            computer.stat(path)
        assert refused.value.status == 400 and refused.value.code == "bad_path", path
    with pytest.raises(RemoteFileNotFound) as missing:
        computer.download("missing.txt")
    assert missing.value.status == 404 and missing.value.code == "file_not_found"
    computer.mkdir("folder")
    with pytest.raises(RemotePathError) as directory:
        computer.download("folder")
    assert directory.value.code == "is_a_directory"


def test_a_link_the_code_planted_is_reported_never_followed(remote: RemoteFactory) -> None:
    computer = remote()
    list(computer.run("python", "import os\nos.symlink('/etc/passwd', 'link')"))
    assert [(e.name, e.kind) for e in computer.list() if e.name == "link"] == [("link", "symlink")]
    for touch in (computer.download, computer.stat):
        with pytest.raises(RemotePathError) as refused:
            touch("link")
        assert refused.value.code == "unsafe_path"


@pytest.mark.anyio
async def test_the_async_file_methods(server: Server) -> None:
    async with RemoteComputer(server.url, token=TOKEN) as computer:
        await computer.aupload("x.txt", b"async")
        assert await computer.adownload("x.txt") == b"async"
        assert (await computer.astat("x.txt")).size == 5
        await computer.amkdir("d")
        assert (await computer.amove("x.txt", "d/x.txt")).path == "d/x.txt"
        assert [e.name for e in await computer.alist("d")] == ["x.txt"]
        assert b"".join([p async for p in computer.adownload_stream("d/x.txt")]) == b"async"
        await computer.aremove("d", recursive=True)
        assert "d" not in [e.name for e in await computer.alist()]
