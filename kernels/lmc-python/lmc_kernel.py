"""Starts an lmc-runtime Python kernel: ipykernel, without what it never uses here.

Run as ``python lmc_kernel.py -f CONNECTION_FILE [options]`` (``kernel.json``),
in place of ``python -m ipykernel_launcher``. Two imports a kernel makes at start
serve nothing the runtime asks of it, and cost a good part of its start:
``debugpy`` (ipykernel's debugger: the kernelspec declares no debugger, and no
debug request is ever sent) and ``jedi`` (IPython's completer: no completion
request is ever sent; it completes without jedi). Both are blocked while the
kernel initializes (``None`` in ``sys.modules`` makes their import fail, which
ipykernel and IPython take as "not installed") and unblocked before it serves
its first request, so the user's code imports them as usual.

What child processes write to the kernel's stdout and stderr (descriptors 1
and 2, which ipykernel reads in a thread) is read as ``lmc_pipes.py`` says: a
character split between two writes stays whole, and a run's reply waits until
what its child processes wrote was read (else it could come after the reply).

The command line is read here when it has only the forms a kernelspec gives
(``-f FILE`` and ``--Class.trait=value``), each value read by its trait as
traitlets would; any other form is left to traitlets, which builds an argument
parser of every option of every class of the kernel to read it (some 5 ms of
the kernel's start). A kernel forked by the runtime's fork server runs its start
file (``lmc_startup.py``) and ``lmc_revive.py`` from the code the fork server
compiled of them, when the files still have that source
(``_precompiled_start_files``, ``_beside``; the fork server's broker runs this
file so too), and takes the shell the fork server made, when its configuration
is that shell's (``_shell_kept``, ``lmc_shell.py``). ``lmc_lean.py`` holds what
makes it start lean (as it does a kernel revived from a checkpoint);
``lmc_pipes.py`` is loaded the same way.
"""

import contextlib
import copy
import os
import sys
from typing import Any

#: Imported at start for features the runtime never uses.
_SKIPPED = ("debugpy", "jedi")
#: The module the fork server leaves compiled start files in (its ``_warm.py``).
_PRECOMPILED = "_lmc_precompiled"


def _option(arg: str) -> tuple[str, str, str] | None:
    """``(Class, trait, value)`` of ``--Class.trait=value``, else None."""
    name, equals, value = arg.partition("=")
    section, dot, key = name[2:].partition(".")
    first = section[:1]  # a letter, for traitlets
    if not (name.startswith("--") and equals and dot and first.isascii() and first.isalpha()):
        return None
    return (section, key, value) if section.isidentifier() and key.isidentifier() else None


def _command_line(app: Any, argv: list[str]) -> Any:
    """The configuration traitlets' command line reads from ``argv`` for ``app``
    (each ``--Class.trait=value`` given, read by its trait when ``Class`` is one of
    the app's, else kept for the class to read), when ``argv`` has only those and
    ``-f FILE``; else None."""
    from traitlets.config import Config
    from traitlets.config.loader import DeferredConfigList, DeferredConfigString

    given: dict[tuple[str, str], list[str]] = {}
    args = iter(argv)
    for arg in args:
        option = _option(arg)
        if option is not None:
            given.setdefault(option[:2], []).append(option[2])
            continue
        given_value = next(args, None) if arg == "-f" else None
        alias = app.aliases.get("f")
        if given_value is None or given_value.startswith("-") or not isinstance(alias, str):
            return None
        section, _, key = alias.partition(".")
        given.setdefault((section, key), []).append(given_value)
    classes: dict[str, Any] = {}
    for cls in app._classes_inc_parents():
        if classes.setdefault(cls.__name__, cls) is not cls:
            return None  # two classes of one name: left to traitlets
    config = Config()
    for (section, key), values in given.items():
        cls = classes.get(section)
        trait = cls.class_traits(config=True).get(key) if cls is not None else None
        value: Any
        if trait is None:  # another class's: it reads the string itself
            if len(values) > 1:
                value = DeferredConfigList(values)
            else:
                value = DeferredConfigString(os.path.expanduser(values[0]))
        elif hasattr(trait, "from_string_list"):
            value = _read(trait.from_string_list, values)
        elif len(values) > 1:
            return None  # an error, traitlets' to say
        else:
            value = _read(trait.from_string, values[0])
        config[section][key] = value
    return config


def _read(read: Any, value: Any) -> Any:
    """``read(value)``, or ``value`` as given if it cannot be read (as traitlets:
    the trait then says what is wrong with it)."""
    try:
        return read(value)
    except Exception:
        return value


def _read_command_line(app: Any) -> None:
    """``app.parse_command_line`` reads the forms of ``_command_line`` itself."""
    original = app.parse_command_line

    def parse_command_line(argv: list[str] | None = None) -> None:
        argv = sys.argv[1:] if argv is None else list(argv)
        config = _command_line(app, argv)
        if config is None:
            original(argv)
            return
        app.argv = argv
        app.cli_config = copy.deepcopy(config)
        app.update_config(app.cli_config)
        app.extra_args = []

    app.parse_command_line = parse_command_line


def _precompiled(precompiled: Any, path: Any) -> Any:
    """The code the fork server compiled of the file ``path`` (``precompiled``: its
    ``_lmc_precompiled`` module's ``code``), if the file still has the source that
    code was compiled from; else None."""
    if not isinstance(precompiled, dict):
        return None
    source, code = precompiled.get(os.fspath(path), (None, None))
    if code is None:
        return None
    try:
        with open(path, "rb") as file:
            return code if file.read() == source else None
    except OSError:
        return None


@contextlib.contextmanager
def _precompiled_start_files() -> Any:
    """While the kernel starts, IPython runs a start file (``exec_files``) from the
    code the fork server compiled of it (``_lmc_precompiled``), if the file still
    has the source that code was compiled from; else it compiles the file. The
    module goes from ``sys.modules``: the user's code finds no trace of it."""
    precompiled = getattr(sys.modules.pop(_PRECOMPILED, None), "code", None)
    py3compat = sys.modules.get("IPython.utils.py3compat")  # imported by IPython 8's shell
    # IPython 9 has no module-level ``execfile`` to stand in for: it compiles.
    original: Any = getattr(py3compat, "execfile", None)
    if not isinstance(precompiled, dict) or not precompiled or original is None:
        yield
        return

    def execfile(fname: Any, glob: Any, loc: Any = None, compiler: Any = None) -> None:
        # IPython names the file by a Path (``safe_execfile``).
        code = _precompiled(precompiled, fname) if compiler is None else None
        if code is None:
            original(fname, glob, loc, compiler)
        else:
            exec(code, glob, glob if loc is None else loc)

    py3compat.execfile = execfile
    try:
        yield
    finally:
        py3compat.execfile = original


def _beside(name: str) -> Any:
    """The module ``name``, from its file beside this one: the module the fork
    server made of it (``_lmc_precompiled.loaded``), else from the fork server's
    compiled code of it, if any, while the file has the source that was compiled;
    None when it cannot be loaded."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    precompiled = sys.modules.get(_PRECOMPILED)
    try:
        code = _precompiled(getattr(precompiled, "code", None), path)
        loaded = getattr(precompiled, "loaded", None)
        made = loaded.get(name) if isinstance(loaded, dict) and code is not None else None
        if getattr(made, "__file__", None) == path:
            return made
        spec = importlib.util.spec_from_file_location(f"_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        if code is None:
            spec.loader.exec_module(module)
        else:
            exec(code, module.__dict__)
        return module
    except Exception:
        return None


def _revive_module() -> Any:
    """``lmc_revive.py``, with what the fork server made for it: the script magics'
    parser and the code of the modules the start file loads."""
    module = _beside("lmc_revive")
    if module is None:
        return None
    precompiled = sys.modules.get(_PRECOMPILED)
    parsers = getattr(precompiled, "parsers", None)
    if isinstance(parsers, dict):
        module._MADE["parsers"].update(parsers)
    compiled = getattr(precompiled, "code", None)
    for path in compiled if isinstance(compiled, dict) else ():
        found = _precompiled(compiled, path)
        if found is not None:
            module._MADE["compiled"][path] = found
    return module


def _kept(module: Any, name: str) -> Any:
    """``module.name()``, a context; a no-op one when the module could not be loaded.
    ``lmc_revive._parsers_kept``: IPython's script magics (``%%bash``, ``%%sh``...)
    share the one argument parser they would each build alike.
    ``lmc_revive._modules_compiled``: a module the fork server compiled is loaded
    from that code. ``lmc_lean.modules_unlisted``: ipykernel does not list every
    loaded module's file, for a debugger this kernel never has."""
    return contextlib.nullcontext() if module is None else getattr(module, name)()


def _shell_kept(app: Any) -> None:
    """The kernel takes the shell the fork server made (``lmc_shell.py``), if its
    configuration is the one that shell was made with; else it makes its own."""
    precompiled = sys.modules.get(_PRECOMPILED)
    shell = getattr(precompiled, "shell", None)
    module = _beside("lmc_shell") if shell is not None else None
    if module is None:
        return
    from ipykernel.zmqshell import ZMQInteractiveShell

    made_with = getattr(precompiled, "shell_config", None)
    init_kernel = app.init_kernel

    def kept_shell_init_kernel() -> None:
        kept = ZMQInteractiveShell._instance is shell and module.usable(
            shell, made_with, app.config
        )
        if not kept:
            ZMQInteractiveShell.clear_instance()
        init_kernel()
        if kept:
            module.adopt(shell, app)

    app.init_kernel = kept_shell_init_kernel


#: What the fork server made for the kernels it forks (its ``_lmc_precompiled``
#: module), held for this kernel's life once it leaves ``sys.modules``: freed,
#: the code objects it keeps (among them the originals of the code it gathered,
#: ``_hot.py``) would be written to as they went, every page of them copied
#: from the fork server (some 11 MiB).
_FORK_SERVERS: list[Any] = []


def main() -> None:
    # The folder of this file is not the user's: the working directory is
    # added back by the kernel (as with ``python -m ipykernel_launcher``).
    del sys.path[0]
    made = sys.modules.get(_PRECOMPILED)
    if made is not None:
        _FORK_SERVERS.append(made)
    blocked = [name for name in _SKIPPED if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        from ipykernel.iostream import OutStream
        from ipykernel.ipkernel import IPythonKernel
        from ipykernel.kernelapp import IPKernelApp

        pipes = _beside("lmc_pipes")
        if pipes is not None:
            pipes.install(OutStream, IPythonKernel)

        app = IPKernelApp.instance()
        _read_command_line(app)
        _shell_kept(app)
        revive, lean = _revive_module(), _beside("lmc_lean")
        if lean is not None:
            lean.iopub_unbounded(app)
            lean.no_heartbeat(app)
            precompiled = sys.modules.get(_PRECOMPILED)
            lean.start_modules_shared(
                app, getattr(precompiled, "modules", None), getattr(precompiled, "mark", None)
            )
        with (
            _kept(revive, "_parsers_kept"),
            _kept(revive, "_modules_compiled"),
            _precompiled_start_files(),
            _kept(lean, "modules_unlisted"),
        ):
            app.initialize()  # type: ignore[no-untyped-call]
    finally:
        for name in blocked:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]
    app.start()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
