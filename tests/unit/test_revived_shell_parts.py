"""A kernel revived from a checkpoint serves the image's shell, readied by
``lmc_shell.unhook`` and made the new kernel's by ``lmc_shell.rebind``."""

from __future__ import annotations

import builtins
import os
import types
from pathlib import Path
from typing import Any

import pytest
from IPython.core.logger import Logger

from lmc_runtime.backends.kernelspecs import kernels_dir

from .kernel_files import kernel_module


def _lmc_shell() -> Any:
    return kernel_module("lmc_shell")


def _shell(logger: Logger) -> Any:
    """What ``unhook`` reads of a shell, with IPython's own logger."""
    trap = types.SimpleNamespace(_nested_level=0)
    return types.SimpleNamespace(
        display_trap=trap,
        builtin_trap=trap,
        events=types.SimpleNamespace(callbacks={"pre_run_cell": []}),
        ast_transformers=[],
        compiler_class=object,
        magics_manager=types.SimpleNamespace(registry={}),
        logger=logger,
    )


def test_a_revived_kernel_logs_to_its_log_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log the user started (``%logstart``) is written to the log's file.

    Regression: the image's log file kept its descriptor's number, which the
    revived kernel closed and gave to another file (its sockets, say): each
    cell's input was written there, and ``%logstop`` closed it."""
    monkeypatch.setattr(builtins, "__lmc_abandoned__", [], raising=False)
    log, other = tmp_path / "ipython_log.py", tmp_path / "other"
    logger = Logger(str(tmp_path), logfname=str(log), logmode="append")
    logger.logstart()
    image_file = logger.logfile
    stale = image_file.fileno()
    # The revived kernel closed the image's descriptors; another file took the number.
    taken = os.open(other, os.O_WRONLY | os.O_CREAT, 0o600)
    os.dup2(taken, stale)
    os.close(taken)
    try:
        _lmc_shell().unhook(_shell(logger), str(kernels_dir() / "lmc-python"))
        logger.log_write("x = 1\n")
        assert other.read_bytes() == b""
        assert log.read_text(encoding="utf-8").endswith("x = 1\n")
    finally:
        if logger.logfile not in (None, image_file):
            logger.logfile.close()
        image_file.close()  # the descriptor ``stale``, the other file's now


def test_a_revived_kernels_shell_lists_its_own_app_once() -> None:
    """Regression: the image's app stayed among the shell's configurables, before
    the new one: ``%config`` listed ``IPKernelApp`` twice, and read the image's
    (``%config IPKernelApp.connection_file`` gave the image's file)."""

    class App:
        pass

    image_app, app, comms = App(), App(), object()
    shell = types.SimpleNamespace(save_sys_module_state=lambda: None)
    shell.configurables = [shell, comms, image_app, comms]
    app.config, app.kernel = {}, types.SimpleNamespace(shell=shell)  # type: ignore[attr-defined]
    _lmc_shell().rebind(shell, app)
    assert shell.configurables == [shell, comms]  # the app's init_shell adds it next
