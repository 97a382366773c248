"""An lmc-runtime Python kernel's shell, made by the fork server before any fork.

Making IPython's shell (``ZMQInteractiveShell``: its traits, magics, display
machinery, completer, history) is the largest part of a kernel's start, and the
same in every kernel of one configuration. The fork server makes it once
(:func:`build`), with the configuration a kernel's command line gives and
folders of its own that it removes at once: it reads no configuration file,
no IPython folder of the host's, and leaves no thread, descriptor or file.
A kernel forked from it finds that shell as IPython's instance, so that
ipykernel's kernel takes it instead of making one, and makes it the session's
(:func:`adopt`): what a shell takes from its process when it is made (its
IPython and profile folders, home, starting folder, ``__main__``, encoding,
environment, exit handler) is taken again, in the kernel's process.

A kernel uses it only if its configuration is the one the shell was made with
(:func:`usable`): a configuration file in the session's IPython or Jupyter
folders makes it build its own, as before.

Stdlib only, besides IPython and ipykernel; loaded by its file name.
"""

import atexit
import builtins
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

#: The configuration sections a kernel's app has of its own (not the shell's).
_APP_SECTIONS = ("IPKernelApp", "KernelApp")
#: Marks the shell the fork server made.
MARK = "_lmc_prebuilt"


def sections(config: Any) -> dict:
    """``config`` as plain dicts, less the app's own values: what a shell reads.
    The sections of other classes inside the app's (``IPKernelApp.IPythonKernel``,
    read by the classes the app is the parent of, the shell among them) stay."""
    found = {}
    for name, section in config.items():
        if not isinstance(section, dict):
            continue
        if name in _APP_SECTIONS:
            section = {key: value for key, value in section.items() if key[:1].isupper()}
            if not section:
                continue
        found[name] = dict(section)
    return found


def build(config: Any) -> Any:
    """The kernel's shell, made with ``config`` in this process (the fork server),
    which keeps nothing of it: its folders are removed, and its ``__main__``,
    environment and exit handlers are as they were."""
    from ipykernel.compiler import XCachingCompiler
    from ipykernel.zmqshell import ZMQInteractiveShell
    from IPython.core.profiledir import ProfileDir

    environ, main = dict(os.environ), sys.modules.get("__main__")
    folder = tempfile.mkdtemp(prefix="lmc-shell-")
    try:
        ipython_dir = os.path.join(folder, "ipython")
        os.mkdir(ipython_dir, 0o700)
        profile = ProfileDir.create_profile_dir(os.path.join(ipython_dir, "profile_default"))
        shell = ZMQInteractiveShell.instance(
            config=config,
            ipython_dir=ipython_dir,
            profile_dir=profile,
            compiler_class=XCachingCompiler,
        )
        atexit.unregister(shell.atexit_operations)  # a kernel's, registered in it
        setattr(shell, MARK, True)
    except BaseException:
        with contextlib.suppress(Exception):
            ZMQInteractiveShell.clear_instance()
        raise
    finally:
        os.environ.clear()
        os.environ.update(environ)
        if main is not None:
            sys.modules["__main__"] = main
        shutil.rmtree(folder, ignore_errors=True)
    return shell


def usable(shell: Any, made_with: Any, config: Any) -> bool:
    """Whether ``shell`` (the fork server's, made with the sections ``made_with``)
    serves a kernel whose app has ``config``."""
    return bool(getattr(shell, MARK, False)) and made_with == sections(config)


def adopt(shell: Any, app: Any) -> None:
    """Make ``shell``, which ipykernel's kernel took as IPython's instance, this
    kernel's (``app``'s, whose kernel was just made): what a shell takes from its
    process when it is made, taken again here."""
    from IPython.utils.path import get_home_dir

    kernel = app.kernel
    shell.config = app.config
    shell.parent = kernel
    shell.kernel = kernel
    manager = getattr(shell, "extension_manager", None)
    watcher = getattr(manager, "_on_ipython_dir_changed", None)
    if watcher is not None:  # a shell being made does not create the folder either
        shell.unobserve(watcher, names=("ipython_dir",))
    try:
        shell.ipython_dir = app.ipython_dir
    finally:
        if watcher is not None:
            shell.observe(watcher, names=("ipython_dir",))
    shell.profile_dir = app.profile_dir
    shell.db = type(shell.db)(os.path.join(app.profile_dir.location, "db"))
    shell.starting_dir = os.getcwd()
    shell.history_manager.dir_hist[:] = [Path.cwd()]
    shell.home_dir = get_home_dir()
    shell.init_logger()
    shell.init_environment()
    shell.init_encoding()
    shell.save_sys_module_state()
    shell.init_sys_modules()
    atexit.register(shell.atexit_operations)


def _defined_in(obj: Any, folder: str) -> bool:
    """Whether the function or method ``obj`` was defined in a file of ``folder``."""
    code = getattr(getattr(obj, "__func__", obj), "__code__", None)
    return code is not None and os.path.dirname(os.path.realpath(code.co_filename)) == folder


def unhook(shell: Any, folder: str) -> None:
    """Ready the image's ``shell`` for a revived kernel. The image was taken in a
    cell (the checkpoint's own run): the traps that cell set (``sys.displayhook``,
    IPython's builtins) are undone, as its end would have. And what the kernel's
    start file (and the modules beside it, in ``folder``) put on the shell for the
    kernel it ran in is taken off: its event callbacks, its syntax tree
    transformer, its compiler's wrapper. The revived kernel runs its start file
    again, for itself; the user's own callbacks and transformers stay, and the
    user's log (``%logstart``) goes on in its file, opened again."""
    for trap in (shell.display_trap, shell.builtin_trap):
        while trap._nested_level > 0:
            trap.__exit__(None, None, None)
    folder = os.path.realpath(folder)
    for callbacks in shell.events.callbacks.values():
        callbacks[:] = [c for c in callbacks if not _defined_in(c, folder)]
    shell.ast_transformers[:] = [
        t
        for t in shell.ast_transformers
        if not any(_defined_in(f, folder) for f in vars(type(t)).values() if callable(f))
    ]
    shell.compile = shell.compiler_class()  # as a new shell's: its cache unwrapped
    # The script magics (%%bash...) ran their processes on a loop in a thread of
    # the kernel the image was taken from: that thread is not here. Their loop and
    # processes stay referenced (their descriptors' numbers are no longer theirs:
    # closing them would close another's), and a new loop starts with the next.
    script = shell.magics_manager.registry.get("ScriptMagics")
    if script is not None and script.event_loop is not None:
        left = [script.event_loop, script.bg_processes]
        builtins.__lmc_abandoned__ = [*getattr(builtins, "__lmc_abandoned__", []), *left]
        script.event_loop, script.bg_processes = None, []
    _log_reopened(shell.logger)


def _log_reopened(logger: Any) -> None:
    """The log the user started (``%logstart``) was a file of the image's kernel:
    its descriptor's number is now another's (writing each cell's input there, or
    ``%logstop`` closing it). The file object stays referenced, never closed, and
    the log is opened again by its name, appended to."""
    logfile = getattr(logger, "logfile", None)
    if logfile is None:
        return
    builtins.__lmc_abandoned__ = [*getattr(builtins, "__lmc_abandoned__", []), logfile]
    try:
        logger.logfile = open(logger.logfname, "a", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        logger.logfile, logger.log_active = None, False
        sys.stderr.write(f"lmc: the log {logger.logfname} is not kept: {exc!r}\n")


def rebind(shell: Any, app: Any) -> None:
    """Make the image's ``shell``, which ipykernel's kernel took as IPython's
    instance in a revived kernel (``app``'s), this kernel's: same process folders
    and namespace, a new kernel and new streams."""
    kernel = app.kernel
    if getattr(kernel, "shell", None) is not shell:
        return
    shell.config = app.config
    shell.parent = kernel
    shell.kernel = kernel
    shell.save_sys_module_state()
    # The image's app was one of the shell's configurables, and this one will be
    # (%config would show and read the image's first); each is there once.
    kept: list = []
    for each in shell.configurables:
        if not any(each is k for k in kept) and not (type(each) is type(app) and each is not app):
            kept.append(each)
    shell.configurables[:] = kept
