"""``lmc serve``'s settings from flags, environment variables and a TOML file.

Each setting is looked up in that order, the first found wins, else its
built-in default: ``--memory 2G`` beats ``LMC_SERVE_MEMORY=2G``, which beats
``memory = "2G"`` in the file of ``--config`` (or ``LMC_SERVE_CONFIG``). The
bearer token is also read from ``LMC_TOKEN``. A bad value is one
:class:`ConfigError` naming where it came from.
"""

from __future__ import annotations

import argparse
import os
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..egress.policy import EgressPolicy
from ..egress.secret_specs import SecretError, load_values
from ..errors import LMCError
from ..sandbox import SessionLimits
from ..web.connections import ConnectionLimits
from .options import GROUPS, OPTIONS, Option
from .settings import ServiceSettings

__all__ = ["ConfigError", "ServeConfig", "add_arguments", "default_data_dir", "load"]

CONFIG_ENV = "LMC_SERVE_CONFIG"


class ConfigError(LMCError, ValueError):
    """A setting of ``lmc serve`` has a bad value, or its file cannot be read."""


@dataclass(frozen=True)
class ServeConfig:
    """What ``lmc serve`` runs with: the service's settings and its own options."""

    settings: ServiceSettings
    log_level: str
    log_format: str
    allow_shared_limits: bool
    #: No token was configured: one was made up, to be shown once.
    token_generated: bool
    #: How long clients may take over their requests.
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/lmc-runtime``, or ``~/.local/share/lmc-runtime``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lmc-runtime"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config`` and a flag for every option; their defaults stay None, so
    that an environment variable or the file can still set them."""
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help=f"a TOML file of settings (default: ${CONFIG_ENV}, else none)",
    )
    for title, options in GROUPS:
        group = parser.add_argument_group(title)
        for option in options:
            described = f"{option.help} (default: {option.shown}; env {option.env_names[0]})"
            if option.switch:
                group.add_argument(option.flag, action="store_true", default=None, help=described)
            elif option.bare is not None:
                group.add_argument(
                    option.flag,
                    nargs="?",
                    const=option.bare,
                    metavar=option.metavar,
                    help=described,
                )
            elif option.repeat:
                group.add_argument(
                    option.flag, action="append", metavar=option.metavar, help=described
                )
            else:
                group.add_argument(option.flag, metavar=option.metavar, help=described)


def _read_file(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as file:
            table = tomllib.load(file)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    known = {option.name for option in OPTIONS}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(
                f"{path}: unknown key {key!r}; the keys are {', '.join(sorted(known))}"
            )
        if isinstance(value, dict):
            raise ConfigError(f"{path}: {key}: a value, not a table, is expected")
    return table


def _value(
    option: Option,
    flags: Mapping[str, object],
    env: Mapping[str, str],
    file: tuple[Path, dict[str, object]] | None,
) -> object:
    raw = flags.get(option.name)
    where = option.flag
    if raw is None:
        found = [name for name in option.env_names if env.get(name, "") != ""]
        if found:
            raw, where = env[found[0]], found[0]
        elif file is not None and option.name in file[1]:
            raw, where = file[1][option.name], f"{file[0]}: {option.name}"
        else:
            return option.default
    try:
        return option.parse(raw)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def resolve(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, object]:
    """Every option's value, by name, from ``args``, ``environ`` and the file."""
    flags = dict(vars(args))
    if flags.get("log_level") is None and (flags.get("serve_verbose") or flags.get("verbose")):
        flags["log_level"] = "debug"
    config = flags.get("config") or environ.get(CONFIG_ENV) or None
    file = None
    if config is not None:
        config_path = Path(config).expanduser()
        file = (config_path, _read_file(config_path))
    return {option.name: _value(option, flags, environ, file) for option in OPTIONS}


def _v(values: Mapping[str, object], name: str) -> Any:
    """The value of option ``name``, as its parser made it."""
    return values[name]


def _limits(values: Mapping[str, object]) -> SessionLimits:
    return SessionLimits(
        memory_bytes=_v(values, "memory"),
        cpu_seconds=_v(values, "cpu_seconds"),
        wall_seconds=_v(values, "wall_seconds"),
        processes=_v(values, "processes"),
        file_size_bytes=_v(values, "file_size"),
        disk_bytes=_v(values, "disk"),
        output_bytes=_v(values, "output_bytes"),
        cpu_quota=_v(values, "cpu_quota"),
    )


def _ceiling(value: object) -> EgressPolicy | None:
    """The ceiling of ``--allow-network LIST`` (None for the bare switch)."""
    return value if isinstance(value, EgressPolicy) else None


def _check_environment(settings: ServiceSettings) -> None:
    """The default environment exists and can run sessions, else a :class:`ConfigError`."""
    if settings.environment is None:
        return
    from ..environments.store import find_environment
    from .errors import EnvironmentBroken, UnknownEnvironment

    try:
        find_environment(settings.data_dir, settings.environment)
    except (UnknownEnvironment, EnvironmentBroken) as exc:
        raise ConfigError(f"--environment: {exc}") from None


def _check_secrets(settings: ServiceSettings, environ: Mapping[str, str]) -> None:
    """Every secret has a usable value, else a :class:`ConfigError` (naming it,
    never showing it)."""
    try:
        load_values(settings.secrets, environ)
    except SecretError as exc:
        raise ConfigError(str(exc)) from None


def load(args: argparse.Namespace, environ: Mapping[str, str]) -> ServeConfig:
    """The configuration of ``lmc serve``; :class:`ConfigError` for the first bad value."""
    values = resolve(args, environ)
    no_auth = bool(values["no_auth"])
    token = None if no_auth else values["token"]
    generated = token is None and not no_auth
    if generated:
        # The shape E2B's SDKs check a key for: the token is E2B_API_KEY as it is.
        token = "e2b_" + secrets.token_hex(20)
    data_dir = values["data_dir"] or default_data_dir()
    assert isinstance(data_dir, Path)
    try:
        settings = ServiceSettings(
            data_dir=data_dir.resolve(),
            host=str(values["host"]),
            port=_v(values, "port"),
            token=token if isinstance(token, str) else None,
            no_auth=no_auth,
            sandbox=not values["no_sandbox"],
            fork_server=not values["no_fork_server"],
            allow_network=values["allow_network"] is not False or bool(values["network_default"]),
            network_ceiling=_ceiling(values["allow_network"]),
            egress_dns=_v(values, "egress_dns"),
            network_default=bool(values["network_default"]),
            max_sessions=_v(values, "max_sessions"),
            max_checkpoints=_v(values, "max_checkpoints"),
            idle_timeout=_v(values, "idle_timeout") or None,
            pool_size=_v(values, "pool_size"),
            pool_max=_v(values, "pool_max"),
            pool_cooldown=_v(values, "pool_cooldown"),
            limits=_limits(values),
            allowed_origins=_v(values, "allowed_origins"),
            max_request_bytes=_v(values, "max_request_bytes"),
            max_upload_bytes=_v(values, "max_upload_bytes"),
            metrics_public=bool(values["metrics_public"]),
            store=_v(values, "store"),
            transcript_sync=str(values["transcript_sync"]),
            gateway_url=_v(values, "gateway_url"),
            gateway_token=_v(values, "gateway_token"),
            replica=_v(values, "replica"),
            e2b=not values["no_e2b"],
            e2b_domain=_v(values, "e2b_domain"),
            e2b_require_secure=bool(values["e2b_require_secure"]),
            secrets=_v(values, "secret"),
            egress_ca_file=_v(values, "egress_ca_file"),
            environment=_v(values, "environment"),
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    _check_environment(settings)
    _check_secrets(settings, environ)
    return ServeConfig(
        settings=settings,
        log_level=str(values["log_level"]),
        log_format=str(values["log_format"]),
        allow_shared_limits=bool(values["allow_shared_limits"]),
        token_generated=generated,
        connections=ConnectionLimits(
            header_timeout=_v(values, "header_timeout"),
            body_timeout=_v(values, "body_timeout"),
        ),
    )
