"""A backend for any language with a Jupyter kernel shipped in ``kernels/``.

Subclasses say which kernelspec to use and how to tell whether the language is
installed; the kernelspec names the provisioner that launches the kernel, and
the core does the rest (turns, deadlines, the stop ladder, restarts).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import ClassVar

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from ..base import Availability, SessionSettings
from ..core import Route, SupervisedBackend, SupervisedSession
from ..kernelspecs import kernels_dir
from .execution import JupyterExecution
from .interpreter import WHO, JupyterInterpreter
from .items import JupyterRoute

__all__ = ["JupyterBackend", "JupyterSession", "kernels_dir"]


class JupyterSession(SupervisedSession):
    """A kernel's session: each run's route is keyed by the ``msg_id`` of its request."""

    def route(self, key: object, tag: str) -> Route:
        return JupyterRoute(f"{uuid.uuid4().hex}-{key}", tag)


class JupyterBackend(SupervisedBackend):
    """Sessions on the kernelspec ``kernel_name``."""

    who = WHO
    execution = JupyterExecution
    session = JupyterSession
    kernel_name: ClassVar[str] = ""
    #: Whether the kernel's startup code also publishes input requests on IOPub.
    announces_input: ClassVar[bool] = False
    #: Whether what the kernel process writes itself is the code's output (the
    #: kernel does not forward its children's output, as IRkernel does not).
    native_output: ClassVar[bool] = False

    def spec_manager(self) -> KernelSpecManager:
        """Where this backend's kernelspecs come from (the shipped ``kernels/``)."""
        return KernelSpecManager(kernel_dirs=[str(kernels_dir())])

    def availability(self) -> Availability:
        try:
            spec = self.spec_manager().get_kernel_spec(self.kernel_name)
        except NoSuchKernel:
            # jupyter-client also hides a kernelspec whose provisioner is not installed.
            return Availability.no(
                f"its kernelspec {self.kernel_name!r} is missing, or its kernel provisioner "
                "is not installed (reinstall lmc-runtime)"
            )
        except Exception as exc:
            return Availability.no(f"its kernelspec {self.kernel_name!r} is unreadable: {exc}")
        # The launch passes a keyword of the runtime's provisioners (wrap_command).
        if "provisioner_name" not in spec.metadata.get("kernel_provisioner", {}):
            return Availability.no(f"its kernelspec {self.kernel_name!r} names no provisioner")
        return Availability.yes()

    def kernel_env(self) -> dict[str, str]:
        """Extra environment variables for the kernel process."""
        return {}

    def environment(self, settings: SessionSettings) -> dict[str, str]:
        return {**super().environment(settings), **self.kernel_env(), **settings.env}

    def interpreter(self, settings: SessionSettings, env: Mapping[str, str]) -> JupyterInterpreter:
        return JupyterInterpreter(
            self.spec_manager(),
            self.kernel_name,
            cwd=settings.cwd,
            work_dir=settings.work_dir,
            shared_dir=settings.shared_dir,
            env=env,
            startup_timeout=settings.timeouts.startup,
            announces_input=self.announces_input,
            native_output=self.native_output,
            wrap_command=settings.command if settings.launcher is not None else None,
        )
