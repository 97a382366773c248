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
and 2, which ipykernel reads in a thread) is decoded across reads here, so a
character split between two writes stays whole: ipykernel decodes each read
alone, which turns its halves into two replacement characters.
"""

import codecs
import os
import sys
from typing import Any

#: Imported at start for features the runtime never uses.
_SKIPPED = ("debugpy", "jedi")


def _watch_whole_characters(stream: Any) -> None:
    """ipykernel's ``OutStream._watch_pipe_fd`` with one UTF-8 decoder for the whole
    pipe: each read goes to the stream as text, and on to the original descriptor."""
    if stream._fid is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    try:
        while stream._should_watch:
            data = os.read(stream._fid, 1 << 16)
            if not data:
                break
            text = decoder.decode(data)
            if text:
                stream.write(text)
            os.write(stream._original_stdstream_copy, data)
    except Exception:
        stream._exc = sys.exc_info()


def _parsers_kept() -> Any:
    """``lmc_revive._parsers_kept()``: while the kernel starts, IPython's script
    magics (``%%bash``, ``%%sh``...) share the one argument parser they would each
    build alike. A no-op context when that file cannot be loaded."""
    import contextlib
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lmc_revive.py")
    try:
        spec = importlib.util.spec_from_file_location("_lmc_revive", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module._parsers_kept()
    except Exception:
        return contextlib.nullcontext()


def main() -> None:
    # The folder of this file is not the user's: the working directory is
    # added back by the kernel (as with ``python -m ipykernel_launcher``).
    del sys.path[0]
    blocked = [name for name in _SKIPPED if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        from ipykernel.iostream import OutStream
        from ipykernel.kernelapp import IPKernelApp

        if callable(getattr(OutStream, "_watch_pipe_fd", None)):
            OutStream._watch_pipe_fd = _watch_whole_characters  # type: ignore[method-assign]

        app = IPKernelApp.instance()
        with _parsers_kept():
            app.initialize()  # type: ignore[no-untyped-call]
    finally:
        for name in blocked:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]
    app.start()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
