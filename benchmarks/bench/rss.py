"""The resident memory (RSS) of this process across a block of code.

The preferred reading is exact: reset the peak (``VmHWM``) by writing ``5`` to
``/proc/self/clear_refs``, read ``VmRSS``, run, read ``VmHWM``; the growth is the
difference. Where the peak cannot be reset, ``VmRSS`` is sampled during the run
instead, which can miss a peak shorter than the sampling interval: a lower bound.
Without Linux's ``/proc`` (macOS), psutil reads the RSS that is sampled.
"""

from __future__ import annotations

import gc
import logging
import mmap
import threading
from pathlib import Path
from types import TracebackType
from typing import Literal

from lmc_runtime.procs import linux_procfs

from .workloads import BenchError

__all__ = ["SAMPLE_INTERVAL_S", "Method", "RssGrowth", "choose_method", "fresh_block"]

logger = logging.getLogger(__name__)

Method = Literal["vmhwm", "sampled"]

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")

#: How often the fallback reads ``VmRSS``.
SAMPLE_INTERVAL_S = 0.005
#: A reset peak may sit this far above ``VmRSS`` (other threads allocate meanwhile).
_RESET_SLACK_KIB = 1024
#: The size of the short-lived allocation that checks the reset really happens.
_PROBE_BYTES = 32 << 20


def _status_kib(field: str, status: Path = STATUS) -> int:
    """One ``kB`` field of ``/proc/self/status``, such as ``VmRSS``."""
    try:
        text = status.read_text(encoding="ascii")
    except OSError as exc:
        raise BenchError(f"the memory figure needs Linux's {status}: {exc}") from exc
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0])
    raise BenchError(f"{status} has no {field} line")


def _rss_kib() -> int:
    """The resident memory of this process now, in KiB."""
    if linux_procfs():
        return _status_kib("VmRSS")
    import psutil

    return int(psutil.Process().memory_info().rss // 1024)


def _reset_peak() -> None:
    """Set ``VmHWM`` back to the current ``VmRSS``."""
    CLEAR_REFS.write_text("5", encoding="ascii")


def fresh_block(nbytes: int) -> mmap.mmap:
    """A new anonymous mapping of *nbytes* with every page written: memory that is
    surely new to this process's RSS (``close()`` gives it back).

    A ``bytes`` object of the same size may not be: malloc can serve it from a free
    chunk of a heap whose pages are already resident, which then adds nothing.
    """
    block = mmap.mmap(-1, nbytes)
    page = mmap.PAGESIZE
    for offset in range(0, nbytes, page):
        block[offset] = 1
    return block


def choose_method() -> tuple[Method, str]:
    """``("vmhwm", "")`` if the peak can be reset here, else ``("sampled", why not)``.

    A short-lived allocation first lifts ``VmHWM`` well above ``VmRSS``, so a
    reset that is accepted but does nothing is caught too.
    """
    if not linux_procfs():
        _rss_kib()
        return "sampled", "there is no Linux /proc here: RSS is sampled with psutil"
    _status_kib("VmRSS")  # fails early, with the reason, if /proc misbehaves
    fresh_block(_PROBE_BYTES).close()
    try:
        _reset_peak()
    except OSError as exc:
        return "sampled", f"writing 5 to {CLEAR_REFS} failed: {exc}"
    gap = _status_kib("VmHWM") - _status_kib("VmRSS")
    if gap > _RESET_SLACK_KIB:
        return "sampled", f"writing 5 to {CLEAR_REFS} left VmHWM {gap} KiB above VmRSS"
    return "vmhwm", ""


class _Sampler(threading.Thread):
    """Reads ``VmRSS`` every :data:`SAMPLE_INTERVAL_S` and keeps the highest."""

    def __init__(self, start_kib: int) -> None:
        super().__init__(name="lmc-bench-rss", daemon=True)
        self.peak_kib = start_kib
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(SAMPLE_INTERVAL_S):
            self.peak_kib = max(self.peak_kib, _rss_kib())


class RssGrowth:
    """``with RssGrowth(method) as growth:`` then ``growth.kib``: how far RSS rose above
    its level at the start of the block, at its highest."""

    def __init__(self, method: Method) -> None:
        self.method = method
        self.kib = 0.0
        self._before = 0
        self._sampler: _Sampler | None = None

    def __enter__(self) -> RssGrowth:
        gc.collect()  # the garbage of earlier runs is not this block's
        if self.method == "vmhwm":
            _reset_peak()
        self._before = _rss_kib()
        if self.method == "sampled":
            self._sampler = _Sampler(self._before)
            self._sampler.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._sampler is not None:
            self._sampler.done.set()
            self._sampler.join()
            peak = max(self._sampler.peak_kib, _rss_kib())
        else:
            peak = _status_kib("VmHWM")
        self.kib = float(peak - self._before)
        logger.debug("RSS grew %d KiB (%s)", self.kib, self.method)
