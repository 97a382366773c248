"""A forked kernel takes the shell the fork server made only if its configuration
is the one that shell was made with (``lmc_shell.usable``).

Regression: the app's sections were left out of the comparison whole, and with
them the sections of other classes inside them: a configuration file's
``c.IPKernelApp.IPythonKernel.ZMQInteractiveShell...``, which a kernel's shell
reads (its parent's parent is the app), was ignored by a kernel that took the
fork server's shell."""

from __future__ import annotations

from typing import Any

from traitlets.config import Config

from .kernel_files import kernel_module


def _lmc_shell() -> Any:
    return kernel_module("lmc_shell")


class _Made:
    _lmc_prebuilt = True


def _command_line() -> Config:
    config = Config()
    config.IPKernelApp.connection_file = "kernel.json"
    config.InteractiveShell.colors = "NoColor"
    config.HistoryManager.enabled = False
    return config


def test_a_shell_configured_through_the_app_is_not_taken() -> None:
    shell = _lmc_shell()
    made_with = shell.sections(_command_line())
    kernels = _command_line()
    kernels.IPKernelApp.connection_file = "/run/kernel-1.json"  # the app's own: alike
    kernels.IPKernelApp.tqdm = "set by ipykernel's shell"
    assert shell.usable(_Made(), made_with, kernels)
    kernels.IPKernelApp.IPythonKernel.ZMQInteractiveShell.ast_node_interactivity = "all"
    assert not shell.usable(_Made(), made_with, kernels)
