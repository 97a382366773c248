"""The fork server gathers the code a kernel runs (``sandbox/_hot.py``): each
function whose code ran gets a copy of its code object, made with the others, so
that a kernel running them copies fewer of the pages it shares with the fork
server (CPython 3.11 writes to a code object as it runs it). The copies must
behave as the originals, and the originals are kept (freed, they would leave
holes that a kernel's new objects fill)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.sandbox import _gather, _hot


def _module() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    source = (
        "def ran(x):\n"
        "    def inner(y):\n"
        "        return [z * 2 for z in y]\n"
        "    return inner([x, x + 1])\n"
        "def idle(x):\n"
        "    return x\n"
        "class Kind:\n"
        "    def method(self):\n"
        "        return 'method'\n"
    )
    exec(compile(source, "<hot>", "exec"), namespace)
    return namespace


def test_a_function_whose_code_ran_gets_a_copy_that_behaves_as_it() -> None:
    ns = _module()
    ran, idle, method = ns["ran"], ns["idle"], ns["Kind"].method
    inner = next(c for c in ran.__code__.co_consts if isinstance(c, types.CodeType))
    codes = {"ran": ran.__code__, "idle": idle.__code__, "method": method.__code__}
    kept = _gather.gather(
        {id(codes["ran"]), id(codes["method"]), id(inner)}, [ran, idle, method], {}
    )
    assert ran.__code__ is not codes["ran"] and ran.__code__ == codes["ran"].replace()
    assert method.__code__ is not codes["method"] and ns["Kind"]().method() == "method"
    assert idle.__code__ is codes["idle"]  # it did not run: where it was
    # The nested code that ran was copied with its function's; it still closes over y.
    copied_inner = next(c for c in ran.__code__.co_consts if isinstance(c, types.CodeType))
    assert copied_inner is not inner and copied_inner.co_name == "inner"
    assert ran(3) == [6, 8]
    # The originals are kept, each once.
    assert {id(c) for c in kept} == {id(codes["ran"]), id(codes["method"]), id(inner)}
    assert len(kept) == 3


def test_regression_a_closure_made_later_is_made_of_the_same_code_as_one_made_before() -> None:
    """A nested function whose code ran, in a function whose own code did not (a
    decorator applied at import): its parent is copied too, so that a closure it
    makes later holds the copy, not the original (two versions of one function's
    code: a profile keyed by code merged their calls into one entry)."""
    ns: dict[str, Any] = {}
    exec(
        compile(
            "def make(n):\n    def inner():\n        return n\n    return inner\n", "<m>", "exec"
        ),
        ns,
    )
    made_before = ns["make"](1)
    original_inner = made_before.__code__
    _gather.gather({id(original_inner)}, [ns["make"], made_before], {})
    made_after = ns["make"](2)
    assert made_before.__code__ is not original_inner
    assert made_after.__code__ is made_before.__code__
    assert (made_before(), made_after()) == (1, 2)


def test_the_compiled_start_files_are_copied_when_they_ran() -> None:
    source = b"def defined():\n    return 'defined'\n"
    code = compile(source, "/k/start.py", "exec")
    other = compile(b"x = 1\n", "/k/other.py", "exec")
    defined = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    compiled: dict[str, tuple[bytes, object]] = {
        "/k/start.py": (source, code),
        "/k/link.py": (source, code),  # the same file by another path
        "/k/other.py": (b"x = 1\n", other),
    }
    _gather.gather({id(code), id(defined)}, [], compiled)
    copied = compiled["/k/start.py"][1]
    assert isinstance(copied, types.CodeType) and copied is not code
    assert compiled["/k/link.py"][1] is copied and compiled["/k/start.py"][0] == source
    assert compiled["/k/other.py"][1] is other
    namespace: dict[str, Any] = {}
    exec(copied, namespace)
    assert namespace["defined"]() == "defined"
    assert namespace["defined"].__code__ is not defined


def test_nothing_is_copied_when_nothing_ran() -> None:
    ns = _module()
    before = ns["ran"].__code__
    assert _gather.gather(set(), [ns["ran"], "not a function", None], {}) == []
    assert ns["ran"].__code__ is before


def test_the_probe_reads_at_most_what_it_may_and_stops_at_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    read, write = os.pipe()
    try:
        os.write(write, b"1\n2\n")
        # The writer still open: past the deadline, nothing.
        assert _hot._read(read, time.monotonic() + 0.05) is None
        os.write(write, b"3\n4\n")
        os.close(write)
        write = -1
        assert _hot._read(read, time.monotonic() + 5) == b"3\n4\n"
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    # More than the most ids it may name: nothing.
    monkeypatch.setattr(_hot, "_MOST", 1)
    read, write = os.pipe()
    try:
        os.write(write, b"1\n" * 40)
        os.close(write)
        assert _hot._read(read, time.monotonic() + 5) is None
    finally:
        os.close(read)


def test_no_probe_runs_without_the_time_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fork server's start has a bound (the runtime's 60 s): with less than
    the probe needs left of it, no probe runs."""
    import tempfile
    import time

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ran = _hot.learn("/nowhere/kernel.py", [], _never, time.monotonic() + 0.5)
    assert ran == set() and not list(tmp_path.iterdir())


def _never(script: str) -> None:
    raise AssertionError("no probe was to run")


#: Runs the probe with a stand-in kernel (``RUN``, the body of ``run(script)``).
PROBE = r"""
import os, sys, time
sys.path.insert(0, SANDBOX)
import _hot
_hot.PROBE_BOUND, _hot._LEAST = LIMIT, 0.0
def run(script):
    RUN
# A folder a killed fork server's probe left, and one of a live fork server's.
os.mkdir(os.path.join(os.environ["TMPDIR"], "lmc-probe-999999999-left"))
os.mkdir(os.path.join(os.environ["TMPDIR"], f"lmc-probe-{os.getppid()}-live"))
ran = _hot.learn("/nowhere/kernel.py", ["-f", "{connection_file}"], run)
try:
    os.waitpid(-1, os.WNOHANG)
    children = "some"
except ChildProcessError:
    children = "none"
print(len(ran), children, sorted(os.listdir(os.environ["TMPDIR"])))
"""


@pytest.mark.parametrize(
    ("body", "bound"),
    [("raise RuntimeError('no kernel')", 20.0), ("time.sleep(60)", 1.0)],
    ids=["a kernel that fails", "a kernel that never answers"],
)
def test_a_probe_that_finds_nothing_gathers_nothing_and_leaves_nothing(
    tmp_path: Path, body: str, bound: float
) -> None:
    """Whatever the probe kernel does, the fork server waits at most its bound
    (the test's own bound: its subprocess's timeout), and no process or folder of
    the probe is left; the folder a killed fork server's probe left is swept, not
    a live one's."""
    sandbox = Path(_hot.__file__).parent
    script = PROBE.replace("SANDBOX", repr(str(sandbox))).replace("LIMIT", repr(bound))
    done = subprocess.run(
        [sys.executable, "-c", script.replace("RUN", body)],
        env={"TMPDIR": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == f"0 none ['lmc-probe-{os.getpid()}-live']"
