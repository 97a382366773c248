"""A kernel forked by the fork server remembers the modules it started with (what
``%reset -f --aggressive`` keeps) as the fork server's set of names and the names
added after its mark in ``sys.modules`` (``lmc_lean.start_modules_shared``):
IPython's own ``set(sys.modules.keys())`` wrote to every name, each on a page the
kernel shared with the fork server (0.9 MiB of copies a kernel)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from IPython.core import shellapp

from .test_kernel_command_line import _launcher

MARK = "_lmc_test_mark"


def _lean() -> Any:
    return _launcher()._beside("lmc_lean")


@pytest.fixture
def marked() -> Iterator[frozenset[str]]:
    """``sys.modules`` with the mark last, and the names it had before the mark."""
    before = frozenset(sys.modules)
    sys.modules[MARK] = types.ModuleType(MARK)
    try:
        yield before
    finally:
        sys.modules.pop(MARK, None)
        for name in ("_lmc_test_added_1", "_lmc_test_added_2"):
            sys.modules.pop(name, None)


class _App:
    """What ``start_modules_shared`` uses of ipykernel's app: its start code, run
    the way IPython's runs it (``set(sys.modules.keys())`` at its end), and its
    shell."""

    def __init__(self, during: Any = None) -> None:
        self.shell = SimpleNamespace()
        self.seen: list[Any] = []
        self._during = during

    def init_code(self) -> None:
        self.seen.append(shellapp.sys)
        if self._during is not None:
            self._during()
        shellapp.sys.argv = ["set", "by", "the", "start", "code"]
        self.shell._sys_modules_keys = set(shellapp.sys.modules.keys())


def _added() -> None:
    sys.modules["_lmc_test_added_1"] = types.ModuleType("_lmc_test_added_1")
    sys.modules["_lmc_test_added_2"] = types.ModuleType("_lmc_test_added_2")


def test_the_start_modules_are_the_fork_servers_and_those_after_its_mark(
    marked: frozenset[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    app = _App(during=_added)
    _lean().start_modules_shared(app, marked, MARK)
    app.init_code()
    kept = app.shell._sys_modules_keys
    assert type(kept).__name__ == "StartModules"
    assert set(kept) == set(marked) | {"_lmc_test_added_1", "_lmc_test_added_2"}
    assert len(kept) == len(set(kept))
    assert "_lmc_test_added_2" in kept and "json" in kept and MARK not in kept
    # What IPython's %reset --aggressive computes: the modules imported since.
    sys.modules["_lmc_test_later"] = types.ModuleType("_lmc_test_later")
    try:
        assert set(sys.modules.keys()) - kept == {"_lmc_test_later"}
    finally:
        del sys.modules["_lmc_test_later"]
    # The start code saw a ``sys`` whose setting went to ``sys``; it is ``sys`` again.
    assert app.seen[0] is not sys and sys.argv == ["set", "by", "the", "start", "code"]
    assert shellapp.sys is sys
    assert MARK not in sys.modules  # the user's code never finds it


def test_the_start_code_walks_only_the_names_after_the_mark(marked: frozenset[str]) -> None:
    _added()
    assert _lean()._names_since(MARK) == ["_lmc_test_added_1", "_lmc_test_added_2"]


def test_a_kernel_without_the_mark_remembers_every_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    app = _App()
    _lean().start_modules_shared(app, frozenset(sys.modules), MARK)
    app.init_code()
    assert app.seen == [sys]
    assert app.shell._sys_modules_keys == set(sys.modules)


def test_nothing_of_the_fork_server_is_taken_unless_it_is_a_set_of_names(
    marked: frozenset[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    for before, mark in ((None, MARK), (set(marked), MARK), (marked, None)):
        app = _App()
        _lean().start_modules_shared(app, before, mark)
        app.init_code()
        assert app.seen == [sys] and type(app.shell._sys_modules_keys) is set


#: IPython's own start code (a terminal app's ``init_code``), with a startup file
#: in its profile and an ``exec_lines`` import, then ``%reset -f --aggressive``.
REAL_IPYTHON = r"""
import importlib.util, os, sys, types
sys.argv = ["ipython"]
spec = importlib.util.spec_from_file_location("_lmc_lean", LEAN)
lean = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lean)
import IPython.core.shellapp as shellapp
from IPython.terminal.ipapp import TerminalIPythonApp
before = frozenset(sys.modules)
sys.modules["_lmc_mark"] = types.ModuleType("_lmc_mark")
app = TerminalIPythonApp.instance()
if SHARED:
    lean.start_modules_shared(app, before, "_lmc_mark")
startup = os.path.join(FOLDER, "profile_default", "startup")
os.makedirs(startup)
with open(os.path.join(startup, "00.py"), "w") as file:
    file.write("import builtins, csv, sys\nbuiltins.argv_seen = list(sys.argv)\n")
app.initialize(argv=[
    "--ipython-dir=" + FOLDER, "--simple-prompt", "--no-banner",
    "--InteractiveShellApp.exec_lines=import fractions", "--HistoryManager.enabled=False",
])
shell = app.shell
import decimal, wave
shell.run_line_magic("reset", "-f --aggressive")
import builtins
print(sorted(n for n in ("csv", "fractions", "wave") if n in sys.modules),
      [os.path.basename(a) for a in builtins.argv_seen], sys.argv, shellapp.sys is sys)
print("_lmc_mark" in sys.modules)
"""


def test_ipythons_own_start_code_and_aggressive_reset_keep_the_same_modules(
    tmp_path: Path,
) -> None:
    """With IPython's own start code (not a stand-in), the modules remembered as
    shared and as IPython remembers them are culled alike by ``%reset -f
    --aggressive``; the start code's ``sys`` settings reach ``sys``."""
    lean = Path(_launcher().__file__).with_name("lmc_lean.py")
    seen = []
    for shared in (False, True):
        folder = tmp_path / f"ipython-{shared}"
        script = (
            REAL_IPYTHON.replace("LEAN", repr(str(lean)))
            .replace("SHARED", repr(shared))
            .replace("FOLDER", repr(str(folder)))
        )
        done = subprocess.run(
            [sys.executable, "-c", script],
            env={"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin")},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        seen.append(done.stdout.strip().splitlines()[-2:])
    # Imported at start (the startup file's csv, exec_lines' fractions): kept;
    # imported after (wave): culled. The startup file saw the sys.argv IPython's
    # start code set (on the stand-in, so on sys), which it then set back.
    # The mark is taken out only where it was used.
    assert seen[0][0] == seen[1][0] == "['csv', 'fractions'] ['00.py'] ['ipython'] True"
    assert (seen[0][1], seen[1][1]) == ("True", "False")
