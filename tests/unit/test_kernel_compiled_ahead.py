"""A forked Python kernel runs the code the fork server compiled ahead of its own
files (``_warm.py``), and skips the work that would copy the pages it shares
with the fork server:

- a forked kernel runs ``lmc_kernel.py`` from that code (``_child._run_script``), as
  ``runpy.run_path`` would, and the launcher loads ``lmc_revive.py`` and ``lmc_lean.py`` from it;
- IPython names the start file by a ``Path``, which must find its code too;
- the modules the start file loads run from that code too;
- the argument parser IPython's script magics share is the one it built;
- while ipykernel makes its kernel, its list of every module's file (for a
  debugger this kernel never has) stays empty.

Each file's code is used only while the file has the source it was compiled
from. The code stood in here differs from the file's, so that a test sees which
ran."""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.utils import py3compat

from lmc_runtime.sandbox import _child

from .test_kernel_command_line import FOLDER, _launcher

PRECOMPILED = "_lmc_precompiled"


@pytest.fixture
def precompiled() -> Iterator[dict[str, tuple[bytes, types.CodeType]]]:
    """The fork server's module of compiled code, empty, for the test to fill."""
    module = types.ModuleType(PRECOMPILED)
    module.code = {}  # type: ignore[attr-defined]
    saved = sys.modules.get(PRECOMPILED)
    sys.modules[PRECOMPILED] = module
    try:
        yield module.code  # type: ignore[attr-defined]
    finally:
        sys.modules.pop(PRECOMPILED, None)
        if saved is not None:
            sys.modules[PRECOMPILED] = saved


def _stand_in(table: dict[str, tuple[bytes, types.CodeType]], path: Path, code: str) -> None:
    table[str(path)] = (path.read_bytes(), compile(code, str(path), "exec"))


def test_regression_a_start_file_named_by_a_path_runs_from_its_compiled_code(
    tmp_path: Path, precompiled: dict[str, Any]
) -> None:
    """IPython's ``safe_execfile`` names the file by a ``Path``: its compiled code
    was looked up by that and never found, so every kernel compiled the file."""
    start = tmp_path / "start.py"
    start.write_bytes(b"ran = 'from the file'\n")
    _stand_in(precompiled, start, "ran = 'compiled ahead'\n")
    namespace: dict[str, Any] = {}
    with _launcher()._precompiled_start_files():
        py3compat.execfile(start, namespace)  # type: ignore[no-untyped-call]
    assert namespace["ran"] == "compiled ahead"


def test_a_forked_kernel_runs_a_script_from_its_compiled_code_as_main(
    tmp_path: Path, precompiled: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "kernel.py"
    script.write_bytes(b"import sys\nsys.ran = ('from the file', __name__)\n")
    _stand_in(
        precompiled,
        script,
        "import sys\nsys.ran = ('compiled ahead', __name__, __file__,"
        " sys.modules['__main__'].__dict__ is globals())\n",
    )
    monkeypatch.setattr(sys, "ran", None, raising=False)
    main = sys.modules["__main__"]
    _child._run_script(str(script))
    assert sys.ran == ("compiled ahead", "__main__", str(script), True)  # type: ignore[attr-defined]
    assert sys.modules["__main__"] is main
    script.write_bytes(b"import sys\nsys.ran = ('changed', __name__)\n")
    _child._run_script(str(script))
    assert sys.ran == ("changed", "__main__")  # type: ignore[attr-defined]
    precompiled.clear()
    other = tmp_path / "other.py"
    other.write_bytes(b"import sys\nsys.ran = ('other', __name__)\n")
    _child._run_script(str(other))
    assert sys.ran == ("other", "__main__")  # type: ignore[attr-defined]
    assert sys.modules["__main__"] is main


def test_the_launcher_loads_lmc_lean_from_its_compiled_code(
    precompiled: dict[str, Any],
) -> None:
    lean = FOLDER / "lmc_lean.py"
    launcher = _launcher()
    assert hasattr(launcher._beside("lmc_lean"), "iopub_unbounded")  # from the file
    _stand_in(precompiled, lean, "ran = 'compiled ahead'\n")
    assert launcher._beside("lmc_lean").ran == "compiled ahead"


def test_the_launcher_takes_the_module_the_fork_server_made_while_its_file_is_unchanged(
    precompiled: dict[str, Any],
) -> None:
    """The fork server makes the modules a kernel loads by their file names
    (``_warm._helpers``); a kernel takes them instead of making its own."""
    lean = FOLDER / "lmc_lean.py"
    made = types.ModuleType("_lmc_lean")
    made.__file__ = str(lean)
    sys.modules[PRECOMPILED].loaded = {"lmc_lean": made}  # type: ignore[attr-defined]
    launcher = _launcher()
    assert launcher._beside("lmc_lean") is not made  # no code of the file: not made here
    _stand_in(precompiled, lean, "ran = 'compiled ahead'\n")
    assert launcher._beside("lmc_lean") is made
    # The file changed since: its own code runs.
    precompiled[str(lean)] = (b"# another source\n", precompiled[str(lean)][1])
    assert hasattr(launcher._beside("lmc_lean"), "iopub_unbounded")


def test_the_launcher_loads_lmc_revive_from_its_compiled_code(
    precompiled: dict[str, Any],
) -> None:
    revive = FOLDER / "lmc_revive.py"
    launcher = _launcher()
    assert hasattr(launcher._revive_module(), "new_kernel")  # from the file
    stand_in = "ran = 'compiled ahead'\n_MADE = {'compiled': {}, 'parsers': {}}\n"
    _stand_in(precompiled, revive, stand_in)
    assert launcher._revive_module().ran == "compiled ahead"


def test_the_launcher_takes_the_modules_compiled_ahead_whose_source_is_unchanged(
    tmp_path: Path, precompiled: dict[str, Any]
) -> None:
    kept, changed = tmp_path / "kept.py", tmp_path / "changed.py"
    for path in (kept, changed):
        path.write_bytes(b"ran = 'from the file'\n")
        _stand_in(precompiled, path, "ran = 'compiled ahead'\n")
    changed.write_bytes(b"ran = 'changed'\n")
    revive = _launcher()._revive_module()
    assert sorted(revive._MADE["compiled"]) == [str(kept)]
    namespace: dict[str, Any] = {}
    with revive._modules_compiled():
        for name, path in (("kept", kept), ("changed", changed)):
            spec = importlib.util.spec_from_file_location(f"_{name}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            namespace[name] = module.ran
    assert namespace == {"kept": "compiled ahead", "changed": "changed"}


def test_the_launcher_takes_the_script_magics_parser_built_ahead(
    precompiled: dict[str, Any],
) -> None:
    built = {("code", "shape"): ("parser", "doc")}
    sys.modules[PRECOMPILED].parsers = built  # type: ignore[attr-defined]
    assert _launcher()._revive_module()._MADE["parsers"] == built


def test_the_kernel_is_made_without_listing_every_module(monkeypatch: pytest.MonkeyPatch) -> None:
    from ipykernel import debugger, ipkernel

    monkeypatch.setattr(debugger, "_is_debugpy_available", False)  # blocked at start
    with _launcher()._beside("lmc_lean").modules_unlisted():
        assert vars(ipkernel)["sys"].modules.copy() == {}
        assert (
            vars(ipkernel)["sys"].modules["sys"] is sys and "sys" in vars(ipkernel)["sys"].modules
        )
        assert vars(ipkernel)["sys"].version_info == sys.version_info
    assert vars(ipkernel)["sys"] is sys


def test_a_kernel_with_a_debugger_lists_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from ipykernel import debugger, ipkernel

    monkeypatch.setattr(debugger, "_is_debugpy_available", True)
    with _launcher()._beside("lmc_lean").modules_unlisted():
        assert vars(ipkernel)["sys"] is sys
