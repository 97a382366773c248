"""What makes an lmc-runtime Python kernel start lean, whether started afresh
(``lmc_kernel.py``, in a process of its own or forked by the fork server) or
revived from a checkpoint (``lmc_revive.py``):

- its IOPub socket has no send high-water mark (:func:`iopub_unbounded`);
- ipykernel does not list every loaded module's file for a debugger the kernel
  never has (:func:`modules_unlisted`).

Stdlib only, besides what the kernel has imported; loaded by its file name.
"""

import contextlib
import sys
import types
from collections.abc import Iterator


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


class _Unlisted:
    """``sys.modules`` as ipykernel's kernel sees it while it is made: the same,
    but its copy is empty (see :func:`modules_unlisted`)."""

    def copy(self) -> dict:
        return {}

    def __getattr__(self, name: str) -> object:
        return getattr(sys.modules, name)

    def __getitem__(self, name: str) -> object:
        return sys.modules[name]

    def __contains__(self, name: object) -> bool:
        return name in sys.modules


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
