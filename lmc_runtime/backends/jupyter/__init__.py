"""Backends on Jupyter kernels, launched through :class:`~.provisioner.LmcProvisioner`."""

from __future__ import annotations

from .backend import JupyterBackend
from .provisioner import LmcProvisioner

__all__ = ["JupyterBackend", "LmcProvisioner"]
