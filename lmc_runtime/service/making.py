"""How the service makes a session: what every session of the server shares
(the fork server, the view of the host, the disk images, one backend registry
per Python) and the making of one, not yet started (the manager starts it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..backends.jupyter.gateway.rest import Gateway
from ..backends.registry import Registry
from ..sandbox import Sandbox, SandboxPolicy
from ..sandbox.disk import WorkDisk
from ..sandbox.disk_images import DiskImages
from ..sandbox.forks import ForkServer, default_cache
from ..sandbox.hostview import HostView
from .replicas import new_session_id
from .secret_sessions import ServerSecrets
from .session import ServiceSession
from .settings import ServiceSettings
from .transcript import Transcripts

if TYPE_CHECKING:
    from ..egress.gateway import EgressGateway
    from .metrics import ServiceMetrics

__all__ = ["SessionMaker"]


class SessionMaker:
    """Makes the server's sessions, with what they share."""

    def __init__(
        self,
        settings: ServiceSettings,
        transcripts: Transcripts,
        gateway: Gateway | None,
        secrets: ServerSecrets | None,
    ) -> None:
        self.settings = settings
        self.transcripts = transcripts
        self.gateway = gateway
        self.secrets = secrets
        #: Forks the sessions' Python kernels (a server running as root only).
        forking = settings.sandbox and settings.fork_server and ForkServer.supported()
        self.forks = ForkServer(default_cache()) if forking else None
        #: What every session's sandbox shares, looked up once a minute at most.
        self.host = HostView()
        #: The formatted images sessions' disks are copied from, one per size.
        self.disk_images = DiskImages(settings.data_dir / "disk-images", WorkDisk.contents)
        #: The sessions' registries, by the Python their kernels run on (None: the server's).
        self._registries: dict[str | None, Registry] = {}

    def new(
        self,
        policy: SandboxPolicy,
        languages: list[str],
        *,
        pooled: bool,
        cwd: str = "",
        egress: EgressGateway | None = None,
        metrics: ServiceMetrics | None = None,
        on_state: Callable[[ServiceSession], None] | None = None,
    ) -> ServiceSession:
        """A new session under ``policy`` (not started)."""
        settings = self.settings
        session_id = new_session_id(settings.replica)
        if self.secrets is not None:  # the placeholders of this session's secrets
            policy = self.secrets.open(session_id, policy)
        sandbox = Sandbox(
            settings.data_dir / "sessions" / session_id,
            policy,
            enabled=settings.sandbox,
            forks=self.forks,
            host=self.host,
            egress=egress,
            disk_images=self.disk_images,
        )
        session = ServiceSession(
            *(session_id, sandbox, policy, languages, self.transcripts),
            sandboxed=settings.sandbox,
            idle_timeout=settings.idle_timeout,
            in_pool=pooled,
            cwd=cwd,
            metrics=metrics,
            gateway=self.gateway,
            registry=self._local_registry(policy),
        )
        if on_state is not None:
            session.on_state = on_state
        return session

    def _local_registry(self, policy: SandboxPolicy) -> Registry | None:
        """The backends of sessions whose kernels run here (not on a gateway), one
        registry per Python (the server's, or an environment's)."""
        if self.gateway is not None:
            return None
        environment = policy.environment
        python = str(environment.python) if environment is not None else None
        registry = self._registries.get(python)
        if registry is None:
            registry = self._registries[python] = Registry(python=python)
        return registry
