"""Warming the fork server (``_zygote.py``): work each kernel's start would
repeat alike, done once before any fork, so that every kernel finds it done.

- IPython's input transformer runs a few cells: the tokenizer's regular
  expression, which a kernel would compile at its first cell (2 ms), is then in
  ``tokenize``'s cache.
- A throwaway completer compiles the regular expressions IPython's completer
  compiles as the kernel's shell is built.
- The Python kernel's own files, which each kernel would compile from source
  (``lmc_kernel.py``, run by the forked kernel's start; ``lmc_lean.py``, ``lmc_pipes.py`` and
  ``lmc_revive.py``, which it loads; the start file ``lmc_startup.py``, run by
  IPython, and the modules it loads from beside itself, when no bytecode of
  theirs is cached: some 6 to 14 ms and 2 to 4 MiB of new code objects a
  kernel), are compiled here from this installation's kernels folder and kept,
  with the source each was compiled from, in the ``_lmc_precompiled`` module
  (``code[path] = (source, code)``). A kernel runs that code only for the
  file it was told to run, and only if the file still has that source; anything
  else is compiled as before.
- The argument parser IPython builds alike for each of its script magics
  (``%%bash``, ``%%sh``...; 3 ms), which a kernel builds once
  (``lmc_revive._parsers_kept``), is built here and kept there too (``parsers``).
- The kernel's shell (``lmc_shell.build``: some 18 ms of each kernel's 48 ms of
  CPU), made with the configuration the kernelspec's command line gives, and
  kept there (``shell``, ``shell_config``); a kernel whose configuration is the
  same takes it and makes it its own (``lmc_shell.adopt``).

- The modules a kernel loads by their file names (``lmc_lean.py``,
  ``lmc_pipes.py``, ``lmc_revive.py``, ``lmc_shell.py``) are made here from
  that code and kept (``loaded``): a kernel takes those modules while their
  files have the source they were made from.
- The code a kernel runs, gathered (``_hot.py``): a probe kernel's start and
  first cell name the code objects they ran, and each function whose code ran
  gets a copy of it, the copies made together (CPython 3.11 writes to a code
  object as it runs it: a kernel then copies the pages of that code alone, not
  the pages it lay on among its module's other code and names; some 1.5 MiB
  a kernel). Only when the fork server passes its way to run a kernel's script.
- The names of the modules it has imported (``modules``, a frozenset), and a
  module put last in ``sys.modules`` as a mark (``mark``, its name): a kernel
  remembers the modules it started with as that set and the names after the
  mark (``lmc_lean.start_modules_shared``), instead of copying every name.

What is warmed is the same for every session: nothing of a session, of the host's
user or of its environment; the shell's IPython folder is one of its own, removed
at once (no configuration or start file is read), and no thread, descriptor or
file is left behind. Code run here is not run often enough
to be specialized: CPython would then rewrite it at once in the fork server, and
a kernel's pages would not be spared (measured: more memory written, not less).

Stdlib only, besides IPython, which the fork server has imported.
"""

import contextlib
import functools
import io
import json
import logging
import os
import sys
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:
    from . import _gather, _hot, _hotcache
else:  # imported by the fork server, run as a script, from this file's folder
    import _gather
    import _hot
    import _hotcache

__all__ = ["PRECOMPILED", "warm"]

logger = logging.getLogger(__name__)

#: The module the kernel finds compiled start files in.
PRECOMPILED = "_lmc_precompiled"
#: Cells of each kind the input transformer handles (code, magic, shell, help).
_CELLS = ("print(1)\n", "x = 1\nx\n", "%time 1\n", "!true\n", "x?\n", "async def f():\n    pass\n")
#: The kernel's modules a kernel loads by their file names (``lmc_kernel._beside``).
_HELPERS = ("lmc_lean.py", "lmc_pipes.py", "lmc_revive.py", "lmc_shell.py")
#: The files of the Python kernel compiled ahead.
_START_FILES = (
    "lmc_kernel.py",
    "lmc_lean.py",
    "lmc_pipes.py",
    "lmc_revive.py",
    "lmc_shell.py",
    "lmc_startup.py",
)


def _kernel_folder() -> str | None:
    """The ``lmc-python`` kernel folder of this installation (as ``kernels_dir()``)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder in (
        os.path.join(package, "_kernels", "lmc-python"),
        os.path.join(os.path.dirname(package), "kernels", "lmc-python"),
    ):
        if os.path.isdir(folder):
            return folder
    return None


def _transformer() -> None:
    from IPython.core.inputtransformer2 import TransformerManager

    manager = TransformerManager()  # type: ignore[no-untyped-call]
    for cell in _CELLS:
        manager.transform_cell(cell)
        manager.check_complete(cell)


def _completer() -> None:
    from IPython.core.completer import IPCompleter

    IPCompleter(shell=None, namespace={}, global_namespace={})  # type: ignore[no-untyped-call]


def _compile(path: str) -> tuple[bytes, types.CodeType]:
    with open(path, "rb") as file:  # this installation's own file
        source = file.read()
    # As runpy, importlib and IPython's ``execfile`` compile them (no future import).
    return source, compile(source, path, "exec", dont_inherit=True)


def _start_files() -> None:
    folder = _kernel_folder()
    module = types.ModuleType(PRECOMPILED, "Kernel start files compiled by the fork server.")
    code: dict[str, tuple[bytes, types.CodeType]] = {}
    module.code = code  # type: ignore[attr-defined]
    sys.modules[PRECOMPILED] = module
    if folder is None:
        return
    for name in _START_FILES:
        path = os.path.join(folder, name)
        # By the path a kernel's command line names, and the one IPython resolves.
        code[path] = code[os.path.realpath(path)] = _compile(path)
    # ``lmc_revive.py`` as a module, from its compiled code: it names the modules
    # the start file loads from beside itself (compiled by their real paths, as
    # the loader names them: the kernel's displays, %pip, checkpoints), and
    # builds the argument parser IPython's script magics (``%%bash``, ``%%sh``...)
    # share in a kernel (``lmc_revive._parsers_kept``), kept here as ``parsers``.
    revive = types.ModuleType("_lmc_revive")
    exec(code[os.path.join(folder, "lmc_revive.py")][1], revive.__dict__)
    start = code[os.path.join(folder, "lmc_startup.py")][1]
    for path in sorted(revive._named_beside(start, folder)):
        code[os.path.realpath(path)] = _compile(os.path.realpath(path))
    module.parsers = dict(revive.script_parsers())  # type: ignore[attr-defined]


def _loaded(name: str) -> types.ModuleType:
    """The kernel's file ``name`` as a module, from the code compiled of it (made
    once, kept in ``loaded``)."""
    folder = _kernel_folder()
    assert folder is not None
    precompiled = sys.modules[PRECOMPILED]
    loaded = vars(precompiled).setdefault("loaded", {})
    if name[:-3] in loaded:
        return loaded[name[:-3]]  # type: ignore[no-any-return]
    module = types.ModuleType(f"_{name[:-3]}")
    module.__file__ = os.path.join(folder, name)
    exec(precompiled.code[module.__file__][1], module.__dict__)  # type: ignore[attr-defined]
    loaded[name[:-3]] = module
    return module


def _helpers() -> None:
    """The modules a kernel loads by their file names, made here (the same in
    every kernel). What ``lmc_pipes.py`` changes in ipykernel's classes each
    kernel does itself, with the module it took: a file changed since would
    otherwise leave it with this process's changes and its own."""
    for name in _HELPERS:
        _loaded(name)


def _shell() -> None:
    """The kernel's shell, made with the configuration its command line gives
    (``lmc_shell.build``), kept as ``shell`` with that configuration's sections
    (``shell_config``): a kernel forked from here takes it if its own
    configuration is the same."""
    from ipykernel.kernelapp import IPKernelApp

    folder = _kernel_folder()
    assert folder is not None
    with open(os.path.join(folder, "kernel.json"), encoding="utf-8") as file:
        argv = [str(part) for part in json.load(file)["argv"][2:]]
    kernel, shell = _loaded("lmc_kernel.py"), _loaded("lmc_shell.py")
    args = [part.replace("{connection_file}", "kernel.json") for part in argv]
    config = kernel._command_line(IPKernelApp(), args)  # type: ignore[no-untyped-call]
    if config is None:
        return  # a command line traitlets reads: the kernel makes its own shell
    module = sys.modules[PRECOMPILED]
    module.shell = shell.build(config)  # type: ignore[attr-defined]
    module.shell_config = shell.sections(config)  # type: ignore[attr-defined]


#: The module the fork server puts last in ``sys.modules`` when it has imported all.
MARK = "_lmc_forked_here"


def _modules() -> None:
    module = sys.modules[PRECOMPILED]
    sys.modules.pop(MARK, None)
    module.modules = frozenset(sys.modules)  # type: ignore[attr-defined]
    sys.modules[MARK] = types.ModuleType(MARK, "Where the fork server's modules end.")
    module.mark = MARK  # type: ignore[attr-defined]


def _gathered(
    run_script: Callable[[str], None],
    also: Iterable[types.ModuleType],
    deadline: float | None,
    cache: str | None,
) -> None:
    """The code a kernel runs, copied together (``_gather.py``): what a probe
    kernel ran by ``deadline`` (``_hot.py``; ``run_script`` runs its script as a forked
    kernel does), or what it ran in an earlier fork server of this
    installation, kept in ``cache`` (``_hotcache.py``); and every function of
    ``also`` (the modules of a kernel's start, which run in each kernel)."""
    folder = _kernel_folder()
    assert folder is not None
    with open(os.path.join(folder, "kernel.json"), encoding="utf-8") as file:
        argv = [str(part) for part in json.load(file)["argv"][1:]]
    script, *args = [part.replace("{resource_dir}", folder) for part in argv]
    module = sys.modules[PRECOMPILED]
    compiled = module.code  # type: ignore[attr-defined]
    wanted = _hotcache.key(argv, compiled, _hot.__file__, _gather.__file__)
    names = _hotcache.load(cache, wanted) if cache else None
    ran = _hot.learn(script, args, run_script, deadline) if names is None else set()
    functions = _gather.functions()
    if names is not None:
        ran = _gather.found(names, functions, compiled)
    elif ran and cache:
        _hotcache.save(cache, wanted, _gather.named(ran, functions, compiled))
    if not ran:
        logger.debug("the probe kernel named no code: none gathered")
        return
    ran |= {id(f.__code__) for m in also for f in vars(m).values() if type(f) is types.FunctionType}
    module.gathered_from = _gather.gather(ran, functions, compiled)  # type: ignore[attr-defined]


def warm(
    run_script: Callable[[str], None] | None = None,
    also: Iterable[types.ModuleType] = (),
    deadline: float | None = None,
    cache: str | None = None,
) -> None:
    """Do the work every kernel's start repeats alike (see the module's docstring).
    With ``run_script`` (the way a forked kernel runs its script), the code a
    kernel runs is gathered too, by ``deadline`` (``time.monotonic()``), what
    an earlier fork server's probe found kept in the folder ``cache``. Each
    part that fails is skipped: the kernel then does that work itself."""
    parts: list[Callable[[], None]] = [_transformer, _completer, _start_files, _shell, _helpers]
    # The mark before the probe, which starts as a kernel does (with the mark).
    parts.append(_modules)
    if run_script is not None:
        parts.append(functools.partial(_gathered, run_script, also, deadline, cache))
    # What the throwaway objects print goes nowhere: the fork server's buffered
    # streams are inherited by every kernel it forks.
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for part in parts:
            try:
                part()
            except Exception:  # an optimization only
                logger.debug("warming %r failed", part, exc_info=True)
