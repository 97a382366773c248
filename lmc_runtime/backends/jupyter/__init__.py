"""Backends on Jupyter kernels, through jupyter-client."""

from __future__ import annotations

from .backend import JupyterBackend, JupyterSession, kernels_dir

__all__ = ["JupyterBackend", "JupyterSession", "kernels_dir"]
