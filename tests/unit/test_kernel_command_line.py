"""The Python kernel's launcher (``kernels/lmc-python/lmc_kernel.py``) reads a
kernelspec's command line itself, to the configuration traitlets would read, and
runs a start file from the code the fork server compiled of it only while the
file has the source that code came from."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from ipykernel import kernelapp
from IPython.utils import py3compat

from lmc_runtime.backends.kernelspecs import kernels_dir

FOLDER = kernels_dir() / "lmc-python"
IPKernelApp: Any = kernelapp.IPKernelApp
#: The kernelspec's own command line (kernel.json).
SPEC = [
    "-f",
    "/s/connection.json",
    f"--IPKernelApp.exec_files={FOLDER}/lmc_startup.py",
    "--InteractiveShell.colors=NoColor",
    "--HistoryManager.enabled=False",
]
READ = [
    SPEC,
    ["-f", "/s/c.json", "--IPKernelApp.exec_files=a", "--IPKernelApp.exec_files=b"],
    ["-f", "/s/c.json", "--IPKernelApp.exec_lines=['x=1']", "--Session.key=b'k'"],
    ["-f", "/s/c.json", "--HistoryManager.hist_file=~/h", "--HistoryManager.hist_file=:m:"],
    ["-f", "/s/c.json", "--Elsewhere.option=~/value", "--IPKernelApp.log_level=10"],
    ["-f", "/s/c.json", "--IPKernelApp.quiet=not-a-bool", "--Session.debug=True"],
    ["--IPKernelApp.exec_lines=a=b", "-f", "/s/c=d.json"],
    [],
]
#: Left to traitlets: a flag, a trait given twice, a missing value, extra arguments.
LEFT = [
    ["-f", "/s/c.json", "--debug"],
    ["-f", "/s/c.json", "--IPKernelApp.connection_file=/s/d.json"],
    ["-f", "/s/c.json", "--IPKernelApp.quiet=1", "--IPKernelApp.quiet=0"],
    ["-f"],
    ["-f", "--debug"],
    ["script.py"],
    ["-f", "/s/c.json", "--", "more"],
    ["-f", "/s/c.json", "--_Private.x=1"],
]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_{name}_under_test", FOLDER / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _launcher() -> ModuleType:
    return _load("lmc_kernel")


def _traitlets(argv: list[str]) -> Any:
    """What traitlets' ``parse_command_line`` reads, before the app takes it."""
    app = IPKernelApp()
    flags, aliases = app.flatten_flags()
    classes = list(app._classes_with_config_traits())
    return app._create_loader(argv, aliases, flags, classes=classes).load_config()


def _execfile(path: Path, namespace: dict[str, Any]) -> None:
    """IPython's ``execfile``, as it is at the time (the launcher replaces it)."""
    py3compat.execfile(str(path), namespace)  # type: ignore[no-untyped-call]


def _typed(config: Any) -> dict[tuple[str, str], tuple[type, Any]]:
    return {(s, k): (type(v), v) for s in config for k, v in config[s].items()}


@pytest.mark.parametrize("argv", READ, ids=" ".join)
def test_the_command_line_reads_as_traitlets_reads_it(argv: list[str]) -> None:
    config = _launcher()._command_line(IPKernelApp(), argv)
    assert config is not None
    assert _typed(config) == _typed(_traitlets(argv))


@pytest.mark.parametrize("argv", LEFT, ids=" ".join)
def test_any_other_form_is_left_to_traitlets(argv: list[str]) -> None:
    assert _launcher()._command_line(IPKernelApp(), argv) is None


def test_the_app_is_configured_as_by_traitlets() -> None:
    app, theirs = IPKernelApp(), IPKernelApp()
    _launcher()._read_command_line(app)
    app.parse_command_line(SPEC)
    theirs.parse_command_line(SPEC)
    assert app.config == theirs.config and app.cli_config == theirs.cli_config
    assert app.connection_file == "/s/connection.json" and app.exec_files == [
        f"{FOLDER}/lmc_startup.py"
    ]
    assert app.argv == SPEC and app.extra_args == []


def test_a_flag_is_read_by_traitlets() -> None:
    app = IPKernelApp()
    _launcher()._read_command_line(app)
    app.parse_command_line(["-f", "/s/c.json", "--debug"])
    assert app.log_level == 10 and app.connection_file == "/s/c.json"


def _precompiled(path: Path, source: bytes, code: str) -> None:
    module = types.ModuleType("_lmc_precompiled")
    module.code = {str(path): (source, compile(code, str(path), "exec"))}  # type: ignore[attr-defined]
    sys.modules["_lmc_precompiled"] = module


def test_a_start_file_runs_from_its_precompiled_code_while_its_source_is_unchanged(
    tmp_path: Path,
) -> None:
    start = tmp_path / "start.py"
    start.write_bytes(b"ran = 'from the file'\n")
    # The code differs from the file's only so that the test sees which ran.
    _precompiled(start, start.read_bytes(), "ran = 'precompiled'\n")
    launcher, original = _launcher(), py3compat.execfile
    with launcher._precompiled_start_files():
        assert "_lmc_precompiled" not in sys.modules  # no trace for the user's code
        first: dict[str, Any] = {}
        _execfile(start, first)
        start.write_bytes(b"ran = 'changed'\n")
        second: dict[str, Any] = {}
        _execfile(start, second)
        other = tmp_path / "other.py"
        other.write_bytes(b"ran = 'other'\n")
        third: dict[str, Any] = {}
        _execfile(other, third)
    assert (first["ran"], second["ran"], third["ran"]) == ("precompiled", "changed", "other")
    assert py3compat.execfile is original


def test_without_precompiled_code_start_files_are_compiled_as_usual(tmp_path: Path) -> None:
    sys.modules.pop("_lmc_precompiled", None)
    start = tmp_path / "start.py"
    start.write_bytes(b"ran = 'from the file'\n")
    original = py3compat.execfile
    with _launcher()._precompiled_start_files():
        assert py3compat.execfile is original
        namespace: dict[str, Any] = {}
        _execfile(start, namespace)
    assert namespace["ran"] == "from the file"


def test_regression_a_kernel_starts_with_an_ipython_that_has_no_execfile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """IPython 9 has no ``py3compat.execfile``: a fresh install's kernel ended at
    its start (ImportError) when the fork server had compiled its start file."""
    start = tmp_path / "start.py"
    start.write_bytes(b"ran = 'from the file'\n")
    _precompiled(start, start.read_bytes(), "ran = 'precompiled'\n")
    bare = types.ModuleType("IPython.utils.py3compat")  # IPython 9's: no execfile
    monkeypatch.setitem(sys.modules, "IPython.utils.py3compat", bare)
    monkeypatch.setattr(sys.modules["IPython.utils"], "py3compat", bare)
    with _launcher()._precompiled_start_files():
        assert "_lmc_precompiled" not in sys.modules
    revive = _load("lmc_revive")
    revive._compiled_startup({str(start): compile("ran = 1", str(start), "exec")})
    assert not hasattr(sys.modules["IPython.utils.py3compat"], "execfile")
