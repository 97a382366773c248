"""``lmc serve``: its options and how it starts (imports the web stack only when run).

Options come from flags, ``LMC_SERVE_*`` variables and a TOML file
(:mod:`.config`). Anything that stops the start (a bad value, a missing
sandbox, a taken port, a data directory another server holds, a failing
start of the application) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .config import add_arguments, default_data_dir

if TYPE_CHECKING:
    from .app import Extension
    from .config import ServeConfig
    from .settings import ServiceSettings

__all__ = ["configure_parser", "default_data_dir", "run_serve"]

logger = logging.getLogger(__name__)


class StartRefused(Exception):
    """The server cannot start; the message says why, in one line."""


def configure_parser(parser: argparse.ArgumentParser, extensions: Sequence[Extension] = ()) -> None:
    """Add the options of ``lmc serve`` to ``parser``; the server it starts has
    ``extensions`` (see :func:`~lmc_runtime.service.create_app`)."""
    add_arguments(parser)
    parser.add_argument(
        "-v",
        "--verbose",
        dest="serve_verbose",
        action="store_true",
        help="log at debug level (as --log-level debug)",
    )
    parser.set_defaults(func=functools.partial(run_serve, extensions=extensions))


def _check_sandbox(settings: ServiceSettings, allow_shared_limits: bool) -> None:
    """Refuse to start where the sandbox (or its network) cannot work as asked."""
    from ..sandbox import sandbox_available

    availability = sandbox_available()
    if not availability.available:
        raise StartRefused(
            f"the sandbox cannot run here: {availability.reason}. Install bubblewrap "
            "(apt-get install bubblewrap) or pass --no-sandbox to run sessions unconfined."
        )
    if settings.allow_network:
        _check_network(settings)
    _check_data_dir(settings)
    if os.geteuid() != 0:
        _check_shared_limits(settings, allow_shared_limits)


def _check_network(settings: ServiceSettings) -> None:
    """Sessions can get the network as the server allows it: under its ceiling, the
    egress gateway's namespaces (which a session asking for a policy gets too)."""
    from ..errors import SandboxUnavailable
    from ..sandbox.egress_netns import egress_available
    from ..sandbox.network import install_host_firewall, network_available

    egress = egress_available()
    if settings.network_ceiling is not None:
        if not egress.available:
            raise StartRefused(
                f"--allow-network: sessions cannot get a network under a policy here: "
                f"{egress.reason}"
            )
    else:
        network = network_available()
        if not network.available:
            raise StartRefused(
                f"--allow-network: sessions cannot get a network here: {network.reason}"
            )
        if not egress.available:
            logger.warning("sessions that ask for an egress policy will fail: %s", egress.reason)
    if os.geteuid() == 0:  # sessions run as uids of the reserved range
        from ..sandbox.identity import UidRange

        try:
            uids = UidRange.reserved()
            install_host_firewall(uids.first, uids.count)
        except (SandboxUnavailable, OSError, ValueError) as exc:
            raise StartRefused(f"--allow-network: {exc}") from None


def _check_data_dir(settings: ServiceSettings) -> None:
    from ..errors import SandboxUnavailable
    from ..sandbox.bwrap import exposed_by, system_paths

    data_dir = settings.data_dir
    bound = exposed_by(data_dir, system_paths())
    if bound is not None:
        raise StartRefused(
            f"the data directory {data_dir} is inside {bound}, which every sandbox sees "
            "read-only; sessions could read each other's files there. Choose another --data-dir."
        )
    if os.geteuid() != 0:
        return
    from ..sandbox.hostprep import unreachable_paths
    from ..sandbox.identity import UidRange

    blocked = unreachable_paths([*system_paths(), data_dir / "sessions"])
    if blocked:
        raise StartRefused(
            f"sandboxes run as host uids of their own and cannot pass through {blocked[0]}; "
            "run `lmc setup`, give it search permission for others (chmod o+x), or "
            "choose another --data-dir"
        )
    try:
        UidRange.reserved()
    except SandboxUnavailable as exc:
        raise StartRefused(str(exc)) from None


def _check_shared_limits(settings: ServiceSettings, allowed: bool) -> None:
    from ..sandbox.identity import per_session_processes

    if per_session_processes() is not None:
        return
    sys.stderr.write(
        "lmc serve: running unprivileged with no cgroup to write: every session "
        "runs as this user and shares one process limit (RLIMIT_NPROC), so one "
        "session's fork bomb starves the others\n"
    )
    if settings.max_sessions > 1 and not allowed:
        raise StartRefused(
            "refusing --max-sessions > 1 with a shared process limit; run as root "
            "(sessions then get host uids of their own), use --max-sessions 1, or "
            "accept the shared limit with --allow-shared-limits"
        )


def run_serve(args: argparse.Namespace, extensions: Sequence[Extension] = ()) -> int:
    """Check the options, then serve until SIGINT or SIGTERM; 2 if it cannot start."""
    from .config import ConfigError, load

    try:
        config = load(args, os.environ)
    except ConfigError as exc:
        return _fail(str(exc))
    try:
        return _start(config, extensions)
    except StartRefused as exc:
        return _fail(str(exc))


def _fail(text: str) -> int:
    sys.stderr.write(f"lmc serve: {text}\n")
    return 2


def _start(config: ServeConfig, extensions: Sequence[Extension]) -> int:
    from .datadir import DataDirInUse, DataDirLock
    from .logs import configure_logging
    from .server import ListenError, StartupFailed, backlog, listen, serve

    settings = config.settings
    secrets = [settings.token] if settings.token else []
    configure_logging(config.log_level, config.log_format, secrets)
    if settings.sandbox:
        _check_sandbox(settings, config.allow_shared_limits)
    elif settings.network_ceiling is not None:
        raise StartRefused(
            "--allow-network ENTRIES needs the sandbox: without it sessions reach the "
            "whole network (drop --no-sandbox)"
        )
    lock = DataDirLock(settings.data_dir)
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except (DataDirInUse, OSError) as exc:
        raise StartRefused(str(exc)) from None
    try:
        limits = config.connections
        try:
            sock = listen(settings.host, settings.port, backlog(limits))
        except ListenError as exc:
            raise StartRefused(str(exc)) from None
        if config.token_generated:
            sys.stdout.write(f"lmc serve: generated token: {settings.token}\n")
        if not settings.sandbox:
            sys.stdout.write("lmc serve: --no-sandbox: sessions run WITHOUT isolation\n")
        sys.stdout.flush()
        try:
            serve(settings, sock, lock, limits, extensions)
        except StartupFailed as exc:
            raise StartRefused(f"cannot start: {exc}") from None
        finally:
            sock.close()
    finally:
        lock.release()
    return 0
