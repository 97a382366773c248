"""A kernel the fork server (:mod:`.forks`) forked into its sandbox, and a process
it started, as the provisioner uses a ``Popen``
(:class:`~lmc_runtime.exit_report.ReportedProcess`).

The fork server says how it ended on its connection. A kernel's end ends its
holder (:mod:`.holder`), and with it the sandbox's PID namespace and everything
left in it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

from ..exit_report import ReportedProcess
from .holder import Holder, end_holder

__all__ = ["ForkedKernel", "ForkedProcess"]


class ForkedProcess(ReportedProcess):
    """A process the fork server started (:meth:`.ForkServer.start`), as a
    ``Popen``. The fork server reports how it ended; a report that never comes
    (the fork server gone) kills it (see :func:`~lmc_runtime.exit_report.read_exit`)."""

    _what = "started process"


class ForkedKernel(ReportedProcess):
    """A forked kernel, as the provisioner uses a ``Popen``. Its end ends its
    sandbox, whose PID namespace takes every process the kernel started with it."""

    ends_its_tree = True
    _handed_over = False
    _what = "forked kernel"

    def __init__(
        self,
        pid: int,
        pidfd: int,
        report: socket.socket,
        holder: Holder,
        init: int,
    ) -> None:
        """``report``: where the fork server says how it ended; ``init``: a pidfd
        of the sandbox's init (it is closed with the kernel)."""
        super().__init__(pid, pidfd, report)
        self._holder: Holder | None = holder
        self._init = init

    def hand_over(self) -> Callable[[], None] | None:
        """Give up its sandbox to a kernel that replaces it in there (a rollback's):
        its own end then ends the kernel alone. What ends the sandbox (blocking,
        once), for that kernel to call when it ends; None once its sandbox has
        ended or was handed over."""
        holder, self._holder = self._holder, None
        if holder is None:
            return None
        init, self._init = self._init, -1
        self._handed_over = True  # its descriptors are still to close at its end
        self.ends_its_tree = False  # what it started is looked for by its session

        def end() -> None:
            end_holder(holder, init)
            os.close(init)

        return end

    def _release(self) -> None:
        """The kernel has ended: end its sandbox and close the descriptors (once)."""
        holder, self._holder = self._holder, None
        handed, self._handed_over = self._handed_over, False
        if holder is None and not handed:
            return
        if holder is not None:
            end_holder(holder, self._init)
            os.close(self._init)
        super()._release()
