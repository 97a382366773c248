"""How an ``lmc serve`` instance is configured."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..egress.policy import EgressPolicy
from ..egress.secret_specs import SecretSpec
from ..sandbox import SessionLimits
from ..web.auth import check_token_rules
from ..web.sockets import is_loopback

__all__ = ["REPLICA_NAME", "ServiceSettings", "is_loopback"]


#: The longest unix socket path (sun_path, with its NUL).
_SOCKET_PATH_MAX = 107
#: What a session adds under the data directory: /sessions/<16 hex>/runtime/<lang>/kernel-N.
_SESSION_PATH_TAIL = len("/sessions/0123456789abcdef/runtime/javascript/kernel-10")
#: A replica's name: it prefixes session ids ("<name>-<16 hex>"), so paths and URLs.
REPLICA_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?")
#: A domain name (lowercase labels), as E2B's host names are made from it.
_DOMAIN = re.compile(
    r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
)


@dataclass(frozen=True)
class ServiceSettings:
    """Everything :func:`~lmc_runtime.service.create_app` needs.

    ``token`` is the bearer token clients must send (None only with ``no_auth``).
    ``sandbox``: run every session under bubblewrap (False is the operator's
    explicit ``--no-sandbox``). ``fork_server``: fork sandboxed Python kernels
    from a fork server (root only; see :mod:`~..sandbox.forks`).
    ``allow_network``: whether sessions may ask for network access at all.
    ``network_default``: whether sessions that do not say otherwise get it
    (needs ``allow_network``). ``idle_timeout``: seconds of inactivity after
    which a session is culled (None: never). ``pool_size``:
    Python sessions kept started and ready to hand out, at least (0: no pool);
    ``pool_max``: the most the pool grows to when creations come in bursts
    (see :attr:`pool_ceiling`), shrinking back to ``pool_size`` once none has
    come for ``pool_cooldown`` seconds. ``metrics_public``:
    ``/metrics`` answers without the token. ``store``: where transcripts go, a
    ``postgresql://`` URL (None: the Jan folder under ``data_dir``).
    ``transcript_sync``: when a run's record in the Jan folder is fsynced:
    ``group``, within 10 ms after its final message (written before it, so visible and
    safe from a crash of the server; appends made meanwhile share one fsync), or
    ``run``, before its final message is sent (one fsync on every run's path).
    ``gateway_url``/``gateway_token``: run Jupyter kernels on a Kernel Gateway or
    Enterprise Gateway instead of locally. ``replica``: this instance's name
    among replicas behind a balancer, carried in its session ids (None: alone).
    ``e2b``: the server also speaks E2B's API (see :mod:`lmc_runtime.e2b`);
    ``e2b_domain``: the domain its sandbox host names end in behind a TLS proxy
    (``<port>-<sandbox id>.<domain>``); ``e2b_require_secure``: sandboxes must be
    created with ``secure=True``, so that their traffic carries an access token.
    """

    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    no_auth: bool = False
    sandbox: bool = True
    fork_server: bool = True
    allow_network: bool = False
    network_default: bool = False
    max_sessions: int = 16
    #: Checkpoints a session may keep at once (``POST .../checkpoints``).
    max_checkpoints: int = 8
    idle_timeout: float | None = 600.0
    pool_size: int = 2
    pool_max: int = 8
    pool_cooldown: float = 300.0
    limits: SessionLimits = field(default_factory=SessionLimits)
    allowed_origins: tuple[str, ...] = ()
    max_request_bytes: int = 1 << 20
    max_upload_bytes: int = 64 << 20
    shutdown_grace: float = 5.0
    ended_kept: int = 1000
    metrics_public: bool = False
    store: str | None = None
    transcript_sync: str = "group"
    gateway_url: str | None = None
    gateway_token: str | None = None
    replica: str | None = None
    e2b: bool = True
    e2b_domain: str | None = None
    e2b_require_secure: bool = False
    #: Secrets sessions may ask for (their values are read when the server starts).
    secrets: tuple[SecretSpec, ...] = ()
    #: CA certificates trusted, besides the system's, for the hosts secrets go to.
    egress_ca_file: Path | None = None
    #: ``--allow-network LIST``: the most a session's egress policy may allow
    #: (None: sessions asking for ``true`` get everything but the host).
    network_ceiling: EgressPolicy | None = None
    #: ``--egress-dns``: the DNS server (host, port) the egress gateway asks
    #: (None: the host's resolver).
    egress_dns: tuple[str, int] | None = None
    #: The environment sessions run in unless they ask for another (None: the server's Python).
    environment: str | None = None

    def __post_init__(self) -> None:
        check_token_rules(self.host, self.token, no_auth=self.no_auth)
        if self.network_ceiling is not None and not self.allow_network:
            raise ValueError("network_ceiling needs allow_network")
        if self.network_default and not self.allow_network:
            raise ValueError("network_default needs allow_network")
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {self.max_sessions}")
        if self.pool_size < 0 or self.pool_size > self.max_sessions:
            raise ValueError(
                f"pool_size must be between 0 and max_sessions ({self.max_sessions}), "
                f"got {self.pool_size}"
            )
        if self.pool_max < 0:
            raise ValueError(f"pool_max must be at least 0, got {self.pool_max}")
        if self.pool_cooldown < 0:
            raise ValueError(f"pool_cooldown must be at least 0, got {self.pool_cooldown}")
        if self.transcript_sync not in ("group", "run"):
            raise ValueError(
                f"transcript_sync must be 'group' or 'run', got {self.transcript_sync!r}"
            )
        if self.replica is not None and not REPLICA_NAME.fullmatch(self.replica):
            raise ValueError(
                f"replica {self.replica!r}: use 1 to 32 lowercase letters, digits and '-', "
                "starting and ending with a letter or digit"
            )
        prefix = len(self.replica) + 1 if self.replica else 0  # "<replica>-" in session ids
        room = _SOCKET_PATH_MAX - len(str(self.data_dir.absolute())) - _SESSION_PATH_TAIL - prefix
        if room < 0:
            raise ValueError(
                f"the data directory {str(self.data_dir)!r} is {-room} characters too long: "
                "kernels talk over unix sockets inside it, whose paths are limited to "
                f"{_SOCKET_PATH_MAX} bytes; choose a shorter --data-dir"
            )
        if self.e2b_domain is not None and not _DOMAIN.fullmatch(self.e2b_domain):
            raise ValueError(f"e2b_domain {self.e2b_domain!r} is not a domain name")
        if self.idle_timeout is not None and self.idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be positive or None, got {self.idle_timeout}")

    @property
    def pool_ceiling(self) -> int:
        """The most warm sessions the pool holds: ``pool_max`` within
        ``max_sessions``, never below ``pool_size``; 0 when ``pool_size`` is 0."""
        if not self.pool_size:
            return 0
        return max(self.pool_size, min(self.pool_max, self.max_sessions))
