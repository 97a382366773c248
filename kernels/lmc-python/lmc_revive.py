"""A kernel revived from a checkpoint's frozen image (see ``lmc_checkpoint.py``):
the frozen copy's child, which :func:`revive` turns into a kernel again. It
holds on to the runtime itself (:func:`hold_on`), as the copy that reaps it may
be dropped first.

The image keeps the interpreter: its objects, modules and namespace. What it
cannot keep are the kernel's ZMQ sockets and threads, so a revived kernel is a
new ipykernel application, kernel and IPython shell around the image's
namespace, on the sockets its command line names. What that costs is cut
where the image already knows the answer:

- **configuration**: when the command line is the image's but for its
  connection file (a rollback's or a fork's always is), the image's parsed
  configuration and profile folder are used again, not parsed and looked up;
- **startup files**: compiled once, with the modules beside them that they
  name and load (the kernel's displays, ``%pip`` and checkpoints: 4 ms of CPU
  where no bytecode is cached), by the kernel before its first checkpoint
  (:func:`compile_once`): that code is shared by all its checkpoints, whose
  private memory it would add 2 MiB to if each compiled it;
- **script magics**: IPython builds the same argument parser, and formats the
  same help text, for each of ``%%bash``, ``%%sh``, ``%%python``... The parser
  built once in the frozen copy serves every magic whose code and arguments
  are the same;
- **the host's wait**: the host is told the sockets are bound as soon as they
  are, and connects while the kernel and shell are made.
"""

import asyncio
import builtins
import contextlib
import contextvars
import copy
import itertools
import os
import signal
import sys
import traceback
import types
from collections.abc import Callable

#: What the kernel (the code) and the frozen copy (the parsers) made once, for
#: every kernel revived from it.
_MADE: dict = {"compiled": {}, "parsers": {}}


def compile_once() -> None:
    """In the kernel, before its first checkpoint's fork: the startup files
    compiled, with the modules beside them that they name and load. Every
    checkpoint shares that code with the kernel, which never writes to it (code
    objects are no garbage collector's): no checkpoint pays for it."""
    from ipykernel.kernelapp import IPKernelApp

    if _MADE["compiled"]:
        return
    for name in IPKernelApp.instance().exec_files:
        path = os.path.realpath(os.path.expanduser(name))
        code = _MADE["compiled"][path] = _compiled(path)
        folder = os.path.dirname(os.path.abspath(os.path.expanduser(name)))
        for module in _named_beside(code, folder):
            _MADE["compiled"][os.path.realpath(module)] = _compiled(module)


def prepare() -> None:
    """In the frozen copy, once: the script magics' parser built, ``lmc_lean.py``
    loaded (and the startup files compiled, if the kernel did not)."""
    compile_once()
    script_parsers()
    _lean()
    _loaded("lmc_shell")


def _lean() -> "types.ModuleType | None":
    """``lmc_lean.py``; without it the kernel starts as ipykernel's."""
    return _loaded("lmc_lean")


def _loaded(name: str) -> "types.ModuleType | None":
    """``name``.py, from beside this file, loaded once; None (said on stderr, the
    kernel's log) when it cannot be."""
    module = _MADE.get(name)
    if module is None:
        import importlib.util

        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
        try:
            spec = importlib.util.spec_from_file_location(f"_{name}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.stderr.write(f"lmc: {path} not loaded: {exc!r}\n")
            return None
        _MADE[name] = module
    return module


def script_parsers() -> dict:
    """The parser the script magics share (:class:`_parsers_kept`), built now if it
    is not yet: the fork server builds it before any kernel is forked."""
    from IPython.core.magics.script import ScriptMagics

    class _Paths:
        script_paths: dict = {}

    with _parsers_kept():
        ScriptMagics._make_script_magic(_Paths(), "sh")
    return _MADE["parsers"]


def _compiled(path: str) -> types.CodeType:
    with open(path, "rb") as file:
        return compile(file.read(), path, "exec")


def _named_beside(code: types.CodeType, folder: str) -> set[str]:
    """The Python files in ``folder`` that ``code`` names (``"lmc_pip"`` for
    ``lmc_pip.py``): the modules a startup file loads from beside itself."""
    found: set[str] = set()
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _named_beside(const, folder)
            continue
        for name in const if isinstance(const, tuple) else (const,):
            if isinstance(name, str) and name.isidentifier():
                path = os.path.join(folder, f"{name}.py")
                if os.path.isfile(path):
                    found.add(path)
    return found


def revive(
    request: dict, fds: tuple, left: str, random_state: object, keep_only: Callable[..., None]
) -> None:
    """In a child of the frozen copy: become a kernel again, on the image's namespace,
    as ``request`` says. ``fds``: the runtime's socket for this kernel, its stdout,
    its stderr, the pipe to say its sockets are bound on. Never returns."""
    reply, stdout, stderr, bound = fds
    code = 1
    try:
        os.setsid()
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        keep_only(1, 2, bound, reply)
        hold_on(reply)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        sys.displayhook = sys.__displayhook__
        rand = sys.modules.get("random")
        if rand is not None and random_state is not None:
            rand.setstate(random_state)  # it reseeds itself in a forked child
        code = new_kernel([str(part) for part in request["argv"]], bound, left)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    os._exit(code)


def hold_on(reply: int) -> None:
    """The kernel's lifeline: a thread that ends its process group once the runtime's
    end of ``reply`` closes (the runtime gave the kernel up, or ended however it
    ended), whether or not the frozen copy that started it is still there."""
    import _thread

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(reply, 1):
                pass  # the runtime says nothing on it: only its end matters
        with contextlib.suppress(OSError):
            os.killpg(os.getpid(), signal.SIGKILL)  # it leads its process group
        os.kill(os.getpid(), signal.SIGKILL)

    _thread.start_new_thread(watch, ())


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
    kept = _loaded("lmc_shell")  # the image's shell serves the new kernel
    for singleton in (IPKernelApp, IPythonKernel, ZMQInteractiveShell):
        if kept is None or singleton is not ZMQInteractiveShell:
            singleton.clear_instance()
    if kept is not None:
        kept.unhook(shell, os.path.dirname(os.path.abspath(__file__)))
    _compiled_startup(_MADE["compiled"])
    asyncio.events._set_running_loop(None)
    asyncio.set_event_loop(asyncio.new_event_loop())
    builtins.__lmc_checkpoint_note__ = left
    sys.argv = argv[1:]
    args = argv[2:]
    app = IPKernelApp.instance(user_ns=user_ns)
    _config_of(old, app, args)
    _say_bound_early(app, bound)
    if kept is not None:
        _rebound(app, kept, shell)
    lean = _lean()
    if lean is not None:
        lean.iopub_unbounded(app)
        lean.no_heartbeat(app)
    unlisted = lean.modules_unlisted() if lean is not None else contextlib.nullcontext()
    with _parsers_kept(), _modules_compiled(), unlisted:
        app.initialize(args)
    new = app.shell
    if new is not shell:  # a new shell: the image's count and inputs carried over
        new.execution_count = count
        new.history_manager.input_hist_parsed[:] = inputs
        new.history_manager.input_hist_raw[:] = inputs
    contextvars.Context().run(app.start)
    return 0


def _rebound(app: object, kept: types.ModuleType, shell: object) -> None:
    """Once ``app`` made its kernel (on the image's ``shell``), the shell is that
    kernel's (``lmc_shell.rebind``), before the start file runs again."""
    init_kernel = app.init_kernel  # type: ignore[attr-defined]

    def init_kernel_on_the_images_shell() -> None:
        init_kernel()
        kept.rebind(shell, app)  # type: ignore[attr-defined]

    app.init_kernel = init_kernel_on_the_images_shell  # type: ignore[attr-defined]


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


class _modules_compiled:
    """While it is entered, a module loaded from a file :func:`prepare` compiled
    runs that code (``SourceFileLoader.get_code``)."""

    def __enter__(self) -> None:
        from importlib.machinery import SourceFileLoader

        self._had = SourceFileLoader.__dict__.get("get_code")
        original = SourceFileLoader.get_code
        compiled = _MADE["compiled"]

        def get_code(loader: SourceFileLoader, fullname: str) -> object:
            code = compiled.get(os.path.realpath(loader.get_filename(fullname)))
            return code if code is not None else original(loader, fullname)

        SourceFileLoader.get_code = get_code  # type: ignore[assignment,method-assign]

    def __exit__(self, *exc: object) -> None:
        from importlib.machinery import SourceFileLoader

        if self._had is None:
            del SourceFileLoader.get_code
        else:
            SourceFileLoader.get_code = self._had  # type: ignore[method-assign]


def _compiled_startup(compiled: dict) -> None:
    """The startup files run from their code compiled in :func:`prepare` (IPython
    8's ``py3compat.execfile``; IPython 9 has none, and compiles them)."""
    py3compat = sys.modules.get("IPython.utils.py3compat")
    original = getattr(py3compat, "execfile", None)
    if original is None:
        return

    def execfile(fname: object, glob: dict, loc: object = None, compiler: object = None) -> None:
        code = compiled.get(os.path.realpath(str(fname)))
        if code is None or compiler is not None:
            return original(fname, glob, loc, compiler)
        exec(code, glob, glob if loc is None else loc)

    py3compat.execfile = execfile
