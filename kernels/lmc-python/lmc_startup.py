"""Runs once inside an lmc-runtime Python kernel, before the first request.

It leaves nothing in the user's namespace: everything lives inside
``_lmc_install``, which deletes itself.

Active line, out of band
------------------------
The user's code runs unchanged. A daemon thread samples the main thread's stack
every ``INTERVAL`` seconds while a cell runs, finds the innermost frame that
belongs to the running cell (so lines inside loops and inside functions the cell
defined count too), and when the line changed publishes an ``lmc_active_line``
message on IOPub whose parent is the running ``execute_request``. It only runs
for requests whose metadata carries ``lmc_active_line: true``; between cells it
sleeps on an event and costs nothing.

Announced input requests
------------------------
Every ``input_request`` sent on stdin is also published on IOPub as
``lmc_input_request``, so a request is never lost to a stdin connection that is
still being set up.

Ordered streams
---------------
ipykernel buffers stdout and stderr separately and flushes each on its own
timer, so ``print(a); print(b, file=sys.stderr)`` can arrive as b, a. Writing to
one stream first flushes the other when it has data pending.
"""


def _lmc_install() -> None:
    import sys
    import threading

    from IPython import get_ipython

    interval = 0.02
    ip = get_ipython()
    kernel = getattr(ip, "kernel", None)
    if ip is None or kernel is None:
        return

    class LineSampler:
        def __init__(self) -> None:
            self.filename: str | None = None
            self.parent: dict | None = None
            self.thread_id: int | None = None
            self.last: int | None = None
            self.running = threading.Event()
            self.idle = threading.Event()
            self.idle.set()

        def pre_run_cell(self, info: object = None) -> None:
            parent = kernel.get_parent("shell") or {}
            if not (parent.get("metadata") or {}).get("lmc_active_line"):
                return
            self.parent = parent
            self.thread_id = threading.get_ident()
            self.filename = None
            self.last = None
            self.idle.clear()
            self.running.set()

        def post_run_cell(self, result: object = None) -> None:
            self.running.clear()
            self.idle.set()

        def cache(self, original):  # type: ignore[no-untyped-def]
            def cache(*args, **kwargs):  # type: ignore[no-untyped-def]
                name = original(*args, **kwargs)
                if self.running.is_set():
                    self.filename = name
                return name

            return cache

        def sample(self) -> None:
            filename, thread_id = self.filename, self.thread_id
            if filename is None or thread_id is None:
                return
            frame = sys._current_frames().get(thread_id)
            while frame is not None and frame.f_code.co_filename != filename:
                frame = frame.f_back
            if frame is None:
                return
            line = frame.f_lineno
            if line is None or line == self.last:
                return
            self.last = line
            # Output printed before this line moved must not be overtaken by it.
            for stream in (sys.stdout, sys.stderr):
                if getattr(stream, "_flush_pending", False):
                    stream.flush()
            kernel.session.send(
                kernel.iopub_socket,
                "lmc_active_line",
                {"line": line},
                parent=self.parent,
                ident=b"lmc_active_line",
            )

        def loop(self) -> None:
            while True:
                self.running.wait()
                while not self.idle.wait(interval):
                    try:
                        self.sample()
                    except Exception as exc:  # never let the sampler die
                        sys.__stderr__.write(f"lmc active-line sampler: {exc!r}\n")

    sampler = LineSampler()
    ip.events.register("pre_run_cell", sampler.pre_run_cell)
    ip.events.register("post_run_cell", sampler.post_run_cell)
    ip.compile.cache = sampler.cache(ip.compile.cache)
    threading.Thread(target=sampler.loop, name="lmc-active-line", daemon=True).start()

    # input(): announce every input_request on IOPub as well. A ROUTER drops a
    # message to a peer whose handshake is still in flight, so the stdin copy
    # can be lost in the first moments after a (re)start; IOPub is known to be
    # connected. The host answers whichever copy comes first, once.
    session = kernel.session
    original_send = session.send

    def send(stream, msg_or_type, content=None, parent=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        sent = original_send(stream, msg_or_type, content, parent, *args, **kwargs)
        if msg_or_type == "input_request" and stream is kernel.stdin_socket:
            original_send(
                kernel.iopub_socket,
                "lmc_input_request",
                content,
                parent=parent,
                ident=b"lmc_input_request",
            )
        return sent

    session.send = send

    out, err = sys.stdout, sys.stderr
    if hasattr(out, "_flush_pending") and hasattr(err, "_flush_pending"):
        for this, other in ((out, err), (err, out)):

            def write(text, _write=this.write, _other=other):  # type: ignore[no-untyped-def]
                if _other._flush_pending:
                    _other.flush()
                return _write(text)

            this.write = write


_lmc_install()
del _lmc_install


def _lmc_install_modules() -> None:
    """The kernel's parts that live beside this file, each a module with
    ``install(ip)``: ``lmc_displays.py`` (Image.show() and files Image.save()
    writes as displays, every matplotlib figure once whatever the backend, and
    chart data beside each; it imports neither PIL nor matplotlib) and
    ``lmc_pip.py`` (``%pip`` that fails its cell when pip fails)."""
    import importlib.util
    import os

    from IPython import get_ipython

    ip = get_ipython()
    if ip is None or getattr(ip, "kernel", None) is None:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("lmc_displays", "lmc_pip", "lmc_checkpoint"):
        spec = importlib.util.spec_from_file_location(f"_{name}", os.path.join(here, f"{name}.py"))
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.install(ip)


_lmc_install_modules()
del _lmc_install_modules


def _lmc_install_env() -> None:
    """Per-execution environment: a request whose metadata carries ``lmc_env``
    (a dict of str) runs with those variables in ``os.environ`` (so its child
    processes see them too); afterwards each is restored, or unset again if it
    was unset, however the cell ended."""
    import os
    import sys

    from IPython import get_ipython

    ip = get_ipython()
    kernel = getattr(ip, "kernel", None)
    if ip is None or kernel is None:
        return
    saved: dict = {}

    def pre_run_cell(info: object = None) -> None:
        saved.clear()
        env = ((kernel.get_parent("shell") or {}).get("metadata") or {}).get("lmc_env")
        for name, value in (env or {}).items():
            previous = os.environ.get(name)
            try:
                os.environ[name] = value
            except (TypeError, ValueError, OSError) as exc:
                sys.stderr.write(f"[lmc] environment variable {name!r} not set: {exc}\n")
                continue
            saved.setdefault(name, previous)

    def post_run_cell(result: object = None) -> None:
        for name, previous in saved.items():
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous
        saved.clear()

    ip.events.register("pre_run_cell", pre_run_cell)
    ip.events.register("post_run_cell", post_run_cell)


_lmc_install_env()
del _lmc_install_env


def _lmc_install_begun() -> None:
    """Say ``lmc_begun`` on IOPub as the cell's code starts: a first statement,
    added to the cell's syntax tree (not its text), calls ``__lmc_begun__`` from
    builtins. It runs where IPython turns an interrupt into the cell's
    KeyboardInterrupt; in a ``pre_run_cell`` hook, or between them, IPython or
    ipykernel would swallow it, so the runtime sends none before this."""
    import ast
    import builtins

    from IPython import get_ipython

    ip = get_ipython()
    kernel = getattr(ip, "kernel", None)
    if ip is None or kernel is None:
        return

    def begun() -> None:
        parent = kernel.get_parent("shell")
        kernel.session.send(kernel.iopub_socket, "lmc_begun", {}, parent=parent)

    class Begun(ast.NodeTransformer):
        def visit_Module(self, node: ast.Module) -> ast.Module:
            call = ast.Expr(ast.Call(ast.Name("__lmc_begun__", ast.Load()), [], []))
            node.body.insert(0, ast.copy_location(call, node.body[0]) if node.body else call)
            return ast.fix_missing_locations(node)

    builtins.__lmc_begun__ = begun  # type: ignore[attr-defined]
    ip.ast_transformers.append(Begun())


def _lmc_hold_interrupts() -> None:
    """An interrupt that comes while a request is handled but before its code runs
    is held, and raised by ``__lmc_begun__`` as the code's first statement; one
    that comes after the code ended is dropped with its request.

    ipykernel turns SIGINT into KeyboardInterrupt for the whole handler: in
    IPython's ``pre_run_cell`` hooks it was swallowed, and in ipykernel's own code
    it dropped the request's reply. The runtime waits for ``lmc_begun`` before it
    interrupts, but not past a bound: on a busy host the code may announce its
    start later, and the interrupt, lost, let the code run on until the kernel was
    restarted, its state gone."""
    import builtins
    import contextlib
    import signal

    from IPython import get_ipython

    ip = get_ipython()
    kernel = getattr(ip, "kernel", None)
    if ip is None or kernel is None or not hasattr(builtins, "__lmc_begun__"):
        return
    held = {"code": False, "asked": False, "cells": 0}  # cells: run_cell calls open

    def on_sigint(signum: int, frame: object) -> None:
        if held["code"]:
            raise KeyboardInterrupt
        held["asked"] = True

    def pre_handler_hook() -> None:
        held["code"] = held["asked"] = False
        held["cells"] = 0
        kernel.saved_sigint_handler = signal.signal(signal.SIGINT, on_sigint)  # type: ignore[attr-defined]

    def post_handler_hook() -> None:
        held["code"] = held["asked"] = False
        signal.signal(signal.SIGINT, kernel.saved_sigint_handler)  # type: ignore[attr-defined]

    def cell_begins(info: object = None) -> None:
        held["cells"] += 1

    def cell_ended(result: object = None) -> None:
        held["cells"] -= 1
        if held["cells"] <= 0:  # the request's own cell, not one its code ran
            held["code"] = False

    announce = builtins.__lmc_begun__  # type: ignore[attr-defined]

    def begun() -> None:
        announce()
        held["code"] = True
        if held["asked"]:
            held["asked"] = False
            raise KeyboardInterrupt

    builtins.__lmc_begun__ = begun  # type: ignore[attr-defined]
    # The runtime follows an interrupt with SIGURG (ignored by default): a
    # SIGINT that landed just before a blocking call (after Python last looked
    # for signals), or that another thread took, leaves its handler pending
    # until the call returns; a handled signal interrupts the call, and Python
    # runs the pending handler before it retries. This one does nothing.
    with contextlib.suppress(ValueError):  # not the main thread: nothing to wake
        signal.signal(signal.SIGURG, lambda signum, frame: None)
    kernel.pre_handler_hook = pre_handler_hook  # type: ignore[attr-defined]
    kernel.post_handler_hook = post_handler_hook  # type: ignore[attr-defined]
    ip.events.register("pre_run_cell", cell_begins)  # type: ignore[attr-defined]
    ip.events.register("post_run_cell", cell_ended)  # type: ignore[attr-defined]


_lmc_install_begun()
_lmc_hold_interrupts()
del _lmc_install_begun, _lmc_hold_interrupts
