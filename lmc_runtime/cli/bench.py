"""``lmc bench``: runs the benchmark kept in the repository's ``benchmarks/`` folder.

The measuring tools are not part of the installed package. The folder is, in order:
``--benchmarks DIR``, ``$LMC_BENCHMARKS``, else ``benchmarks/`` beside the package's
own folder (a checkout, installed editable). Without one, the command says in one
line how to get it (exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["BENCHMARKS_ENV", "benchmarks_dir", "cmd_bench"]

#: The variable naming the benchmarks folder when ``--benchmarks`` is not given.
BENCHMARKS_ENV = "LMC_BENCHMARKS"
#: The name the folder is imported under (its modules import each other by it).
_PACKAGE = "benchmarks"
#: What a benchmarks folder holds: the module ``lmc bench`` runs.
_COMMAND = Path("bench", "command.py")

NOT_FOUND = (
    "lmc bench: the benchmarks are not part of the installed package; run it from a"
    " checkout of the repository (pip install -e .) or pass --benchmarks DIR"
    f" (or set {BENCHMARKS_ENV}) naming the checkout's benchmarks/ folder"
)


class _NoBenchmarks(Exception):
    """The one line ``lmc bench`` prints when it has no benchmarks to run."""


def _holds_benchmarks(folder: Path) -> bool:
    return (folder / "__init__.py").is_file() and (folder / _COMMAND).is_file()


def benchmarks_dir(given: Path | None, package: Path | None = None) -> Path | None:
    """The benchmarks folder to run, or None when there is none beside ``package``
    (the installed ``lmc_runtime`` folder); a folder named by ``given`` or by
    ``$LMC_BENCHMARKS`` that holds none is an error."""
    named = given if given is not None else os.environ.get(BENCHMARKS_ENV) or None
    if named is not None:
        folder = Path(named).expanduser().resolve()
        if not _holds_benchmarks(folder):
            raise _NoBenchmarks(f"lmc bench: {folder} holds no benchmarks (no {_COMMAND})")
        return folder
    here = package if package is not None else Path(__file__).resolve().parents[1]
    beside = here.parent / _PACKAGE
    return beside if _holds_benchmarks(beside) else None


def _command(folder: Path) -> ModuleType:
    """Import ``benchmarks.bench.command`` from ``folder``."""
    loaded = sys.modules.get(_PACKAGE)
    if loaded is None:
        spec = importlib.util.spec_from_file_location(
            _PACKAGE, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        assert spec is not None and spec.loader is not None  # a file that exists
        module = importlib.util.module_from_spec(spec)
        sys.modules[_PACKAGE] = module
        spec.loader.exec_module(module)
    elif folder not in {Path(p).resolve() for p in getattr(loaded, "__path__", [])}:
        raise _NoBenchmarks(
            f"lmc bench: another {_PACKAGE} package is imported already ({loaded.__file__})"
        )
    return importlib.import_module(f"{_PACKAGE}.bench.command")


def cmd_bench(args: argparse.Namespace) -> int:
    """Find the benchmarks folder and run its benchmark with ``args``."""
    try:
        folder = benchmarks_dir(args.benchmarks)
        if folder is None:
            raise _NoBenchmarks(NOT_FOUND)
        command = _command(folder)
    except _NoBenchmarks as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    code: int = command.run(args)
    return code
