"""What a fork server's probe found is kept for the next fork server
(``sandbox/_hotcache.py``), as the names of the code that ran
(``sandbox/_gather.py``): kept and read back whole, under a key that changes
with any module file; and the folder is the runtime's own, never followed
through a link or used if another may write in it."""

from __future__ import annotations

import json
import os
import sys
import threading
import types
from pathlib import Path

import pytest

from lmc_runtime.sandbox import _gather, _hotcache

NAMES = {("/lib/a.py", 3, "f", 7), ("/lib/a.py", 9, "C.m.<locals>.g", 0), ("<string>", 1, "h", 1)}


def _compiled() -> dict[str, tuple[bytes, object]]:
    source = b"def outer():\n    def inner():\n        return 1\n    return inner\n"
    return {"/k/kernel.py": (source, compile(source, "/k/kernel.py", "exec"))}


def test_names_kept_are_read_back_under_their_key_only(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    assert _hotcache.load(cache, "k1") is None  # none kept yet, and no folder made
    assert not os.path.exists(cache)
    assert _hotcache.save(cache, "k1", NAMES)
    assert _hotcache.load(cache, "k1") == NAMES
    assert _hotcache.load(cache, "k2") is None
    assert os.stat(cache).st_mode & 0o777 == 0o700
    assert [p.stat().st_mode & 0o777 for p in Path(cache).iterdir()] == [0o600]


def test_only_the_newest_files_are_kept(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    for n in range(_hotcache._KEPT + 3):
        assert _hotcache.save(cache, f"k{n}", NAMES)
        os.utime(Path(cache) / f"hot-k{n}.json", ns=(n * 10**9, n * 10**9))
    kept = sorted(p.name for p in Path(cache).iterdir())
    assert len(kept) == _hotcache._KEPT and "hot-k0.json" not in kept
    assert _hotcache.load(cache, f"k{_hotcache._KEPT + 2}") == NAMES


@pytest.mark.parametrize(
    "content",
    [b"{", b"[]", b'{"key": "k1", "names": [["a", "x", "b", 1]]}', b'{"key": "k1"}'],
    ids=["cut short", "not an object", "a line that is no number", "no names"],
)
def test_a_damaged_file_is_not_used(tmp_path: Path, content: bytes) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / "hot-k1.json").write_bytes(content)
    assert _hotcache.load(str(cache), "k1") is None


def test_a_file_kept_under_another_key_is_not_used(tmp_path: Path) -> None:
    """Regression: a file renamed to another key's name says its own key."""
    cache = tmp_path / "cache"
    assert _hotcache.save(str(cache), "k1", NAMES)
    os.rename(cache / "hot-k1.json", cache / "hot-k2.json")
    assert _hotcache.load(str(cache), "k2") is None


def test_a_folder_that_is_a_link_is_neither_read_nor_written(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    assert _hotcache.save(str(elsewhere), "k1", NAMES)
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    assert _hotcache.load(str(link), "k1") is None
    assert not _hotcache.save(str(link), "k2", NAMES)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["hot-k1.json"]


def test_a_folder_others_may_write_in_is_not_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert _hotcache.save(str(cache), "k1", NAMES)
    cache.chmod(0o777)
    assert _hotcache.load(str(cache), "k1") is None
    assert not _hotcache.save(str(cache), "k2", NAMES)


def test_a_file_that_is_a_link_or_a_pipe_is_not_read(tmp_path: Path) -> None:
    """Neither followed (a link to a file of the host's) nor waited on (a pipe
    with no writer would block the fork server's start)."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    target = tmp_path / "target.json"
    target.write_text(json.dumps({"key": "k1", "names": sorted(NAMES)}))
    (cache / "hot-k1.json").symlink_to(target)
    assert _hotcache.load(str(cache), "k1") is None
    os.mkfifo(cache / "hot-k2.json")
    result: list[object] = []
    reader = threading.Thread(target=lambda: result.append(_hotcache.load(str(cache), "k2")))
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # unblock it, then fail
        with open(cache / "hot-k2.json", "wb"):
            pass
        reader.join(timeout=10)
        pytest.fail("reading a pipe waited for a writer")
    assert result == [None]


def test_the_key_changes_with_a_modules_file_and_the_kernels_source(tmp_path: Path) -> None:
    module_file = tmp_path / "lmc_probe_key_module.py"
    module_file.write_text("x = 1\n")
    module = types.ModuleType("lmc_probe_key_module")
    module.__file__ = str(module_file)
    compiled = _compiled()
    sys.modules[module.__name__] = module
    try:
        first = _hotcache.key(["k.py"], compiled)
        assert _hotcache.key(["k.py"], compiled) == first
        assert _hotcache.key(["k.py", "-f"], compiled) != first
        os.utime(module_file, ns=(1, 1))
        second = _hotcache.key(["k.py"], compiled)
        assert second != first
        changed = {p: (s + b"\n", c) for p, (s, c) in compiled.items()}
        assert _hotcache.key(["k.py"], changed) != second
        extra = tmp_path / "own.py"
        extra.write_text("")
        assert _hotcache.key(["k.py"], compiled, str(extra)) != second
    finally:
        del sys.modules[module.__name__]


def test_the_names_of_the_code_that_ran_find_that_code_again() -> None:
    """What the probe names (ids in one process) is kept as names, which find
    the same code objects, nested ones and compiled files' among them."""
    namespace: dict[str, object] = {}
    exec(
        compile("def f():\n    return [i for i in ()]\ndef g():\n    pass\n", "/m.py", "exec"),
        namespace,
    )
    f, g = namespace["f"], namespace["g"]
    assert isinstance(f, types.FunctionType) and isinstance(g, types.FunctionType)
    comprehension = next(c for c in f.__code__.co_consts if isinstance(c, types.CodeType))
    compiled = _compiled()
    kernel = compiled["/k/kernel.py"][1]
    assert isinstance(kernel, types.CodeType)
    outer = next(c for c in kernel.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in outer.co_consts if isinstance(c, types.CodeType))
    ran = {id(comprehension), id(inner), id(object())}
    names = _gather.named(ran, [f, g, "not a function"], compiled)
    assert {name[:3] for name in names} == {
        ("/m.py", 2, "f.<locals>.<listcomp>"),
        ("/k/kernel.py", 2, "outer.<locals>.inner"),
    }
    assert _gather.found(names, [f, g], compiled) == {id(comprehension), id(inner)}


def test_code_made_alike_by_exec_is_told_apart_by_its_bytecode() -> None:
    """Regression: code that ``exec`` made shares a file name, line and name
    (``<string>``, 1, ``<lambda>``); the name kept of one does not find the others."""
    made = [eval(compile(f"lambda x: x + {n}", "<string>", "eval")) for n in range(3)]
    made.append(eval(compile("lambda x: x.y", "<string>", "eval")))
    names = _gather.named({id(made[3].__code__)}, made, {})
    assert _gather.found(names, made, {}) == {id(made[3].__code__)}
