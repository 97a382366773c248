"""A kernel revived from a checkpoint's frozen image (see ``lmc_checkpoint.py``).

The image keeps the interpreter: its objects, modules and namespace. What it
cannot keep are the kernel's ZMQ sockets and threads, so a revived kernel is a
new ipykernel application, kernel and IPython shell around the image's
namespace, on the sockets its command line names. What that costs is cut
where the image already knows the answer:

- **configuration**: when the command line is the image's but for its
  connection file (a rollback's or a fork's always is), the image's parsed
  configuration and profile folder are used again, not parsed and looked up;
- **startup files**: compiled once in the frozen copy (:func:`prepare`);
- **script magics**: IPython builds the same argument parser, and formats the
  same help text, for each of ``%%bash``, ``%%sh``, ``%%python``... The parser
  built once in the frozen copy serves every magic whose code and arguments
  are the same;
- **the host's wait**: the host is told the sockets are bound as soon as they
  are, and connects while the kernel and shell are made.
"""

import asyncio
import builtins
import contextvars
import copy
import itertools
import os
import sys

#: What the frozen copy made once, for every kernel revived from it.
_MADE: dict = {"compiled": {}, "parsers": {}}


def prepare() -> None:
    """In the frozen copy, once: the startup files compiled and the script magics'
    parser built."""
    from ipykernel.kernelapp import IPKernelApp

    for name in IPKernelApp.instance().exec_files:
        path = os.path.realpath(os.path.expanduser(name))
        with open(path, "rb") as file:
            _MADE["compiled"][path] = compile(file.read(), path, "exec")
    from IPython.core.magics.script import ScriptMagics

    class _Paths:
        script_paths: dict = {}

    with _parsers_kept():
        ScriptMagics._make_script_magic(_Paths(), "sh")


def new_kernel(argv: list, bound: int, left: str) -> int:
    """Become a kernel with command line ``argv`` on the image's namespace; say
    on ``bound`` once its sockets are bound. Returns once the kernel ends."""
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelapp import IPKernelApp
    from ipykernel.zmqshell import ZMQInteractiveShell

    old = IPKernelApp.instance()
    shell = old.kernel.shell
    # Kept referenced: the image's ZMQ objects must never be closed or collected here.
    builtins.__lmc_abandoned__ = [*getattr(builtins, "__lmc_abandoned__", []), old]
    user_ns, count = shell.user_ns, shell.execution_count
    inputs = list(shell.history_manager.input_hist_parsed)
    for singleton in (IPKernelApp, IPythonKernel, ZMQInteractiveShell):
        singleton.clear_instance()
    _compiled_startup(_MADE["compiled"])
    asyncio.events._set_running_loop(None)
    asyncio.set_event_loop(asyncio.new_event_loop())
    builtins.__lmc_checkpoint_note__ = left
    sys.argv = argv[1:]
    args = argv[2:]
    app = IPKernelApp.instance(user_ns=user_ns)
    _config_of(old, app, args)
    _say_bound_early(app, bound)
    with _parsers_kept():
        app.initialize(args)
    new = app.shell
    new.execution_count = count
    new.history_manager.input_hist_parsed[:] = inputs
    new.history_manager.input_hist_raw[:] = inputs
    contextvars.Context().run(app.start)
    return 0


def _connection_file(args: list) -> "str | None":
    for flag, value in itertools.pairwise(args):
        if flag in ("-f", "--f"):
            return value
    return None


def _config_of(old: object, app: object, args: list) -> None:
    """The image's configuration for ``app``, when ``args`` differ from the image's
    command line only in the connection file; otherwise ``app`` parses its own."""
    before = list(getattr(old, "argv", None) or [])
    new_file, old_file = _connection_file(args), _connection_file(before)
    if new_file is None or old_file is None:
        return
    if [new_file if a == old_file else a for a in before] != args:
        return
    config = copy.deepcopy(old.config)  # type: ignore[attr-defined]
    config.IPKernelApp.connection_file = new_file
    app.config = config  # type: ignore[attr-defined]
    app.argv = list(args)  # type: ignore[attr-defined]
    app.profile_dir = old.profile_dir  # type: ignore[attr-defined]
    for step in ("parse_command_line", "init_profile_dir", "init_config_files", "load_config_file"):
        setattr(app, step, _skip)


def _skip(*args: object, **kwargs: object) -> None:
    return None


def _say_bound_early(app: object, bound: int) -> None:
    """Write on ``bound`` once the kernel's sockets are bound and its connection
    file written, before its kernel and shell are made."""
    original = app.log_connection_info  # type: ignore[attr-defined]

    def log_connection_info() -> None:
        original()
        os.write(bound, b"1")
        os.close(bound)

    app.log_connection_info = log_connection_info  # type: ignore[attr-defined]


class _parsers_kept:
    """While it is entered, a magic's argument parser is built once for each code
    and arguments (``magic_arguments.construct_parser``)."""

    def __enter__(self) -> None:
        from IPython.core import magic_arguments

        self._module = magic_arguments
        self._original = original = magic_arguments.construct_parser
        parsers = _MADE["parsers"]

        def construct_parser(magic_func: object) -> object:
            code = getattr(magic_func, "__code__", None)
            try:
                shape = repr(
                    (
                        getattr(magic_func, "argcmd_kwds", {}),
                        getattr(magic_func, "__doc__", None),
                        getattr(magic_func, "argcmd_name", None),
                        [(type(d), vars(d)) for d in magic_func.decorators],  # type: ignore[attr-defined]
                    )
                )
            except Exception:
                return original(magic_func)
            key = (code, shape)
            found = parsers.get(key) if code is not None else None
            if found is None:
                parser = original(magic_func)
                if code is not None:
                    parsers[key] = (parser, magic_func.__doc__)
                return parser
            parser, doc = found
            magic_func.__doc__ = doc
            return parser

        magic_arguments.construct_parser = construct_parser

    def __exit__(self, *exc: object) -> None:
        self._module.construct_parser = self._original


def _compiled_startup(compiled: dict) -> None:
    """The startup files run from their code compiled in :func:`prepare`."""
    from IPython.utils import py3compat

    original = py3compat.execfile

    def execfile(fname: object, glob: dict, loc: object = None, compiler: object = None) -> None:
        code = compiled.get(os.path.realpath(str(fname)))
        if code is None or compiler is not None:
            return original(fname, glob, loc, compiler)
        exec(code, glob, glob if loc is None else loc)

    py3compat.execfile = execfile
