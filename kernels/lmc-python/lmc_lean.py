"""What makes an lmc-runtime Python kernel start lean, whether started afresh
(``lmc_kernel.py``, in a process of its own or forked by the fork server) or
revived from a checkpoint (``lmc_revive.py``):

- its IOPub socket has no send high-water mark (:func:`iopub_unbounded`);
- it starts no heartbeat, which the runtime never pings (:func:`no_heartbeat`;
  its kernel spec says so, so the runtime waits for no heartbeat socket);
- ipykernel does not list every loaded module's file for a debugger the kernel
  never has (:func:`modules_unlisted`);
- a kernel forked by the fork server remembers the modules it started with
  (for ``%reset -f --aggressive``) as the fork server's set and the few it
  added, not as a copy of every name (:func:`start_modules_shared`).

Stdlib only, besides what the kernel has imported; loaded by its file name.
"""

import contextlib
import sys
import types
from collections.abc import Iterable, Iterator, Set


def no_heartbeat(app: object) -> None:
    """``app`` starts no heartbeat: the runtime never pings it (its channels start
    without one, and it watches the kernel's process), and ipykernel gives it a
    thread and a ZMQ context of its own (two more threads) in every kernel."""
    app.init_heartbeat = lambda: None  # type: ignore[attr-defined]


def iopub_unbounded(app: object) -> None:
    """``app``'s IOPub socket gets no send high-water mark. IOPub is PUB/SUB: past
    the mark (1,000 messages by default) it drops what a reader that fell behind
    has not read yet, without a word. Regression: 7 of 10,000 displays lost."""
    import zmq

    init_iopub = app.init_iopub  # type: ignore[attr-defined]

    def unbounded(context: zmq.Context) -> None:
        context.setsockopt(zmq.SNDHWM, 0)
        try:
            init_iopub(context)
        finally:
            context.sockopts.pop(zmq.SNDHWM, None)

    app.init_iopub = unbounded  # type: ignore[attr-defined]


class _Modules:
    """``sys.modules``, read through: what a subclass defines is seen instead."""

    def __getattr__(self, name: str) -> object:
        return getattr(sys.modules, name)

    def __getitem__(self, name: str) -> object:
        return sys.modules[name]

    def __contains__(self, name: object) -> bool:
        return name in sys.modules


class _Unlisted(_Modules):
    """``sys.modules`` as ipykernel's kernel sees it while it is made: the same,
    but its copy is empty (see :func:`modules_unlisted`)."""

    def copy(self) -> dict:
        return {}


@contextlib.contextmanager
def modules_unlisted() -> Iterator[None]:
    """While the kernel is made, ipykernel's list of every loaded module's file (for
    its debugger, which this kernel never has: debugpy is blocked) stays empty.
    Its walk of ``sys.modules`` writes to every module object: in a kernel forked
    by the fork server, that copied some 800 pages it shared with it (3 MiB); in
    a revived one, those of the image, the user's modules too."""
    try:
        from ipykernel import debugger, ipkernel
    except ImportError:
        yield
        return
    if (
        getattr(debugger, "_is_debugpy_available", True)
        or getattr(ipkernel, "sys", None) is not sys
    ):
        yield
        return
    seen = types.ModuleType("sys")
    seen.__getattr__ = lambda name: getattr(sys, name)  # type: ignore[method-assign]
    seen.modules = _Unlisted()  # type: ignore[assignment]
    ipkernel.sys = seen  # type: ignore[attr-defined]
    try:
        yield
    finally:
        ipkernel.sys = sys  # type: ignore[attr-defined]


class StartModules(Set):
    """The names of the modules a forked kernel started with: those of the fork
    server (``before``, its set, shared) and those the kernel added (``added``)."""

    def __init__(self, before: frozenset, added: set) -> None:
        self._before = before
        self._added = added

    @classmethod
    def _from_iterable(cls, names: Iterable) -> set:  # what set operations return
        return set(names)

    def __contains__(self, name: object) -> bool:
        return name in self._before or name in self._added

    def __iter__(self) -> Iterator:
        yield from self._before
        yield from (name for name in self._added if name not in self._before)

    def __len__(self) -> int:
        return len(self._before) + sum(1 for name in self._added if name not in self._before)


def _names_since(mark: str) -> list:
    """The names ``sys.modules`` has after ``mark``, in their order; the walk reads
    only them (a dict keeps the order names were added in)."""
    names = []
    for name in reversed(sys.modules):
        if name == mark:
            break
        names.append(name)
    names.reverse()
    return names


class _ModulesSince(_Modules):
    """``sys.modules``, but ``keys()`` are only the names after ``mark``."""

    def __init__(self, mark: str) -> None:
        self._mark = mark

    def keys(self) -> list:
        return _names_since(self._mark)


class _SysSince(types.ModuleType):
    """``sys`` as IPython's shell application sees it while it runs the start
    code: the same (what it sets is set on ``sys``), but its ``modules.keys()``
    are those after the fork server's mark."""

    def __init__(self, mark: str) -> None:
        super().__init__("sys")
        vars(self)["modules"] = _ModulesSince(mark)

    def __getattr__(self, name: str) -> object:
        return getattr(sys, name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(sys, name, value)


def start_modules_shared(app: object, before: object, mark: object) -> None:
    """A kernel forked by the fork server remembers the modules it started with
    (IPython's ``_sys_modules_keys``, which ``%reset -f --aggressive`` keeps) as
    :class:`StartModules`: ``before``, the fork server's set of the names
    ``sys.modules`` had when it put the module ``mark`` in it, and the names added
    after ``mark``. IPython's own ``set(sys.modules.keys())`` writes the reference
    count of every name, each on a page the kernel shares with the fork server:
    some 230 pages copied (0.9 MiB a kernel). The mark is taken out of
    ``sys.modules`` once the start code has run. A kernel without the mark (not
    forked, or revived from a checkpoint) is left as it is."""
    if not isinstance(before, frozenset) or not isinstance(mark, str) or mark not in sys.modules:
        return
    try:
        from IPython.core import shellapp
    except ImportError:
        return
    init_code = app.init_code  # type: ignore[attr-defined]

    def init_code_shared() -> None:
        if getattr(shellapp, "sys", None) is not sys or mark not in sys.modules:
            sys.modules.pop(mark, None)
            init_code()
            return
        shellapp.sys = _SysSince(mark)  # type: ignore[attr-defined]
        try:
            init_code()
        finally:
            shellapp.sys = sys  # type: ignore[attr-defined]
            sys.modules.pop(mark, None)
        shell = getattr(app, "shell", None)
        added = getattr(shell, "_sys_modules_keys", None)
        if isinstance(added, set):
            shell._sys_modules_keys = StartModules(before, added)  # type: ignore[union-attr]

    app.init_code = init_code_shared  # type: ignore[attr-defined]
