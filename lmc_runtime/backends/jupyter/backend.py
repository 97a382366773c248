"""A backend for a language with a Jupyter kernelspec shipped in ``kernels/``.

Subclasses name the kernelspec, may start another interpreter than its
``argv[0]`` (:meth:`JupyterBackend.program`) and say what the language needs
(:meth:`JupyterBackend.requirement`); the core does turns, deadlines, the stop
ladder and restarts. With a ``gateway``, kernels run there instead
(:class:`~.gateway.interpreter.GatewayInterpreter`), set up by
:meth:`JupyterBackend.gateway_startup`.
"""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from anyio.abc import TaskGroup
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from ...media import SvgRenderer
from ..base import Availability, SessionSettings
from ..core import Interpreter, Route, SupervisedBackend, SupervisedSession
from ..kernelspecs import kernels_dir
from .contexts import SharedContext
from .execution import JupyterExecution, KernelRoute
from .gateway.rest import Gateway
from .interpreter import WHO, JupyterInterpreter

__all__ = ["JupyterBackend", "probe"]

#: How long a check of an interpreter's packages may take.
_PROBE_BOUND = 30.0


class _Unanswered(str):
    """Why a check failed when the interpreter only did not answer in time (a
    loaded host, maybe): the backend asks again the next time."""

    __slots__ = ()


def probe(argv: Sequence[str], failure: str) -> str | None:
    """None if ``argv`` runs and exits with 0, else why not (``failure`` if it said no)."""
    try:
        subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_PROBE_BOUND,
            check=True,
        )
    except OSError as exc:
        return f"{argv[0]} cannot be run: {exc.strerror or exc}"
    except subprocess.TimeoutExpired:
        return _Unanswered(f"{argv[0]} did not answer within {_PROBE_BOUND:g} s")
    except subprocess.CalledProcessError:
        return failure
    return None


class _SpecManager(KernelSpecManager):  # type: ignore[misc]
    """The shipped kernelspecs, with ``argv[0]`` replaced by ``program`` when set."""

    program: str | None = None

    def get_kernel_spec(self, kernel_name: str) -> Any:
        spec = super().get_kernel_spec(kernel_name)
        if self.program is not None:
            spec.argv = [self.program, *spec.argv[1:]]
        return spec


class JupyterSession(SupervisedSession):
    """A kernel's session: a run's route is keyed by its request's (unique) ``msg_id``,
    and renders SVG displays as the session's own processes (``svg``)."""

    svg: SvgRenderer | None = None
    settings: SessionSettings | None = None

    def route(self, key: object, tag: str) -> Route:
        return KernelRoute(f"{uuid.uuid4().hex}-{key}", tag, self.svg)


class JupyterBackend(SupervisedBackend):
    """Sessions on the kernelspec ``kernel_name``."""

    who = WHO
    execution = JupyterExecution
    session = JupyterSession
    kernel_name: ClassVar[str] = ""
    #: The kernel's startup code also publishes input requests on IOPub.
    announces_input: ClassVar[bool] = False
    #: What the kernel process writes itself is the code's output (IRkernel does
    #: not forward its children's output).
    native_output: ClassVar[bool] = False
    #: IOPub's receive high-water mark, in messages (0: none). Only for a kernel whose
    #: IOPub has no send mark: a mark at both ends drops what passes them.
    iopub_mark: ClassVar[int] = 0
    #: The language of the kernelspecs a gateway's kernel may have.
    gateway_language: ClassVar[str] = ""
    #: Where kernels run instead of on this machine, if anywhere.
    gateway: Gateway | None = None

    def program(self) -> str | None:
        """The interpreter to start instead of the kernelspec's ``argv[0]``, if any."""
        return None

    def requirement(self) -> str | None:
        """What the language lacks here, or None; checked once (see :meth:`availability`),
        but for a check that did not answer in time."""
        return None

    def spec_manager(self) -> KernelSpecManager:
        manager = _SpecManager(kernel_dirs=[str(kernels_dir())])
        manager.program = self.program()
        return manager

    def availability(self) -> Availability:
        found = self._availability
        if isinstance(found.reason, _Unanswered):  # not kept: a server's sessions share it
            del self.__dict__["_availability"]
            return Availability.no(str(found.reason))
        return found

    def gateway_startup(self, env: Mapping[str, str]) -> str:
        """The runtime's startup code for a gateway's kernel, setting ``env`` there."""
        raise NotImplementedError

    @functools.cached_property
    def _contexts(self) -> SharedContext:
        """The ZMQ context of this backend's kernels, in every session."""
        return SharedContext()

    @functools.cached_property
    def _availability(self) -> Availability:
        if self.gateway is not None:
            return _gateway_availability()
        missing = self.requirement()
        if missing is not None:
            return Availability.no(missing)
        name = self.kernel_name
        try:
            spec = self.spec_manager().get_kernel_spec(name)
        except NoSuchKernel:  # jupyter-client also hides one whose provisioner is missing
            return Availability.no(
                f"its kernelspec {name!r} is missing, or its kernel provisioner "
                "is not installed (reinstall lmc-runtime)"
            )
        except Exception as exc:
            return Availability.no(f"its kernelspec {name!r} is unreadable: {exc}")
        if "provisioner_name" not in spec.metadata.get("kernel_provisioner", {}):
            return Availability.no(f"its kernelspec {name!r} names no provisioner")
        return Availability.yes()

    def kernel_env(self) -> dict[str, str]:
        """Extra environment variables for the kernel process."""
        return {}

    def environment(self, settings: SessionSettings) -> dict[str, str]:
        return {**super().environment(settings), **self.kernel_env(), **settings.env}

    async def start(self, task_group: TaskGroup, settings: SessionSettings) -> SupervisedSession:
        session = await super().start(task_group, settings)
        if isinstance(session, JupyterSession):
            session.svg = SvgRenderer(launch=settings.launch())
            session.settings = settings
        return session

    def interpreter(self, settings: SessionSettings, env: Mapping[str, str]) -> Interpreter:
        if self.gateway is not None:
            from .gateway.interpreter import GatewayInterpreter

            remote_env = self.gateway.env if self.gateway.env is not None else settings.env
            return GatewayInterpreter(
                self.gateway,
                self.gateway_language,
                self.gateway_startup(remote_env),
                settings.timeouts.startup,
                announces_input=self.announces_input,
            )
        return JupyterInterpreter(
            self.spec_manager(),
            self.kernel_name,
            settings,
            env,
            announces_input=self.announces_input,
            native_output=self.native_output,
            iopub_mark=self.iopub_mark,
            contexts=self._contexts,
        )


def _gateway_availability() -> Availability:
    """Kernels on a gateway need httpx and websockets (the [gateway] extra)."""
    for module in ("httpx", "websockets"):
        if importlib.util.find_spec(module) is None:
            return Availability.no(
                f"kernels on a Jupyter gateway need {module}: pip install 'lmc-runtime[gateway]'"
            )
    return Availability.yes()
