"""The server's secrets and its sessions: the broker made when the server starts,
the secrets a session asks for checked, and its placeholders put in its
environment once it has an id (see :mod:`lmc_runtime.egress.secrets`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from ..egress.secret_specs import load_values
from ..egress.secrets import SecretBroker, upstream_context
from ..sandbox.policy import EgressTrust, SandboxPolicy
from .errors import InvalidRequest
from .settings import ServiceSettings

__all__ = ["ServerSecrets", "secrets_policy", "server_secrets", "trust_folder"]

logger = logging.getLogger(__name__)


def trust_folder(data_dir: Path) -> Path:
    """Where the server writes its egress CA's certificate and bundle."""
    return data_dir / "egress"


@dataclass(frozen=True)
class ServerSecrets:
    """The server's secrets: their ``broker`` (the gateway's interceptor), and
    the ``trust`` of its CA that sessions asking for one get."""

    broker: SecretBroker
    trust: EgressTrust

    def policy(self, policy: SandboxPolicy, names: Sequence[str]) -> SandboxPolicy:
        """``policy`` with the secrets ``names`` and the trust of the CA;
        :class:`InvalidRequest` for a secret the server has not."""
        try:
            self.broker.check(names)
        except LookupError as exc:
            raise InvalidRequest(str(exc.args[0])) from None
        return replace(policy, secrets=tuple(dict.fromkeys(names)), trust=self.trust)

    def open(self, session_id: str, policy: SandboxPolicy) -> SandboxPolicy:
        """``policy`` with the placeholders of its secrets, made for
        ``session_id``, in its environment (over variables of the same names)."""
        if not policy.secrets:
            return policy
        placeholders = self.broker.open(session_id, policy.secrets)
        return replace(policy, env=MappingProxyType({**policy.env, **placeholders}))

    def close(self, session_id: str) -> None:
        self.broker.close(session_id)


def server_secrets(
    settings: ServiceSettings, environ: Mapping[str, str] | None = None
) -> ServerSecrets | None:
    """The server's secrets (None: it has none), their values read from
    ``environ`` (None: the server's environment, from which they are then
    removed) or their files, the CA's certificate written to
    :func:`trust_folder`. Blocking (it writes files)."""
    if not settings.secrets:
        return None
    values = load_values(settings.secrets, os.environ if environ is None else environ)
    if environ is None:  # no process the server starts inherits them
        for spec in settings.secrets:
            if spec.file is None:
                os.environ.pop(spec.name, None)
    upstream = upstream_context(settings.egress_ca_file)
    broker = SecretBroker(settings.secrets, values, upstream=upstream)
    trust = EgressTrust(*broker.ca.write_files(trust_folder(settings.data_dir)))
    names = ", ".join(spec.name for spec in settings.secrets)
    logger.info("secrets brokered on the way out: %s", names)
    return ServerSecrets(broker, trust)


def secrets_policy(
    secrets: ServerSecrets | None, policy: SandboxPolicy, names: Sequence[str]
) -> SandboxPolicy:
    """``policy`` with the secrets ``names`` asked for (see :meth:`ServerSecrets.policy`)."""
    if not names:
        return policy
    if secrets is None:
        raise InvalidRequest(
            "this server has no secrets to give; its operator adds them with `lmc serve --secret`"
        )
    return secrets.policy(policy, names)
