"""``lmc serve``: its options and how it starts (imports the web stack only when run)."""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

__all__ = ["configure_parser", "default_data_dir", "run_serve"]


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/lmc-runtime``, or ``~/.local/share/lmc-runtime``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lmc-runtime"


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``lmc serve`` to ``parser``."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on")
    parser.add_argument("--token", default=None, help="bearer token (default: $LMC_TOKEN)")
    parser.add_argument(
        "--no-auth", action="store_true", help="no token at all (loopback addresses only)"
    )
    parser.add_argument(
        "--no-sandbox", action="store_true", help="run sessions without bubblewrap (unsafe)"
    )
    parser.add_argument(
        "--allow-network",
        action="store_true",
        help='let sessions ask for network access ({"network": true}; refused with 403 '
        "otherwise). Such a session gets a network namespace of its own whose traffic "
        "leaves through slirp4netns: the internet, but not the host's loopback services "
        "(this API among them), its own addresses, link-local addresses or its abstract "
        "unix sockets. Needs slirp4netns, iptables and a /dev/net/tun open to the "
        "sessions' users (mode 0666; as root, sessions run as uids of their own); the "
        "server refuses to start if they are missing. As root it also adds (once, and "
        "leaves) a host firewall rule rejecting traffic from the sandboxes' uid range "
        "to the host's own addresses",
    )
    parser.add_argument(
        "--network-default",
        action="store_true",
        help="sessions get network access unless they ask for none (implies --allow-network)",
    )
    parser.add_argument("--max-sessions", type=int, default=16, help="most sessions at once")
    parser.add_argument(
        "--allow-shared-limits",
        action="store_true",
        help="allow --max-sessions > 1 where sessions cannot get limits of their own "
        "(an unprivileged server without cgroups shares one process limit)",
    )
    parser.add_argument(
        "--idle-timeout", type=float, default=600.0, help="seconds before an idle session ends"
    )
    parser.add_argument("--pool-size", type=int, default=2, help="warm Python sessions kept")
    parser.add_argument(
        "--wall-seconds", type=float, default=None, help="default wall time per execution"
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="sessions and transcripts")
    parser.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """Check the options, then serve until SIGINT or SIGTERM."""
    from dataclasses import replace

    from ..errors import SandboxUnavailable
    from ..sandbox import SessionLimits, sandbox_available
    from ..sandbox.bwrap import exposed_by, system_paths
    from .server import serve
    from .settings import ServiceSettings, is_loopback

    def fail(text: str) -> int:
        sys.stderr.write(f"lmc serve: {text}\n")
        return 2

    if args.no_auth and not is_loopback(args.host):
        return fail(f"--no-auth is only allowed on a loopback address, not on {args.host!r}")
    if not args.no_sandbox:
        availability = sandbox_available()
        if not availability.available:
            return fail(
                f"the sandbox cannot run here: {availability.reason}. Install bubblewrap "
                "(apt-get install bubblewrap) or pass --no-sandbox to run sessions unconfined."
            )
    allow_network = args.allow_network or args.network_default
    if allow_network and not args.no_sandbox:
        from ..sandbox.network import network_available

        network = network_available()
        if not network.available:
            return fail(f"--allow-network: sessions cannot get a network here: {network.reason}")
        if os.geteuid() == 0:  # sessions run as uids of the reserved range
            from ..errors import SandboxUnavailable
            from ..sandbox.identity import UidRange
            from ..sandbox.network import install_host_firewall

            try:
                uids = UidRange.reserved()
                install_host_firewall(uids.first, uids.count)
            except (SandboxUnavailable, OSError, ValueError) as exc:
                return fail(f"--allow-network: {exc}")
    data_dir = (args.data_dir or default_data_dir()).resolve()
    if not args.no_sandbox:
        bound = exposed_by(data_dir, system_paths())
        if bound is not None:
            return fail(
                f"the data directory {data_dir} is inside {bound}, which every sandbox sees "
                "read-only; sessions could read each other's files there. Choose another "
                "--data-dir."
            )
    if not args.no_sandbox and os.geteuid() == 0:
        from ..sandbox.hostprep import unreachable_paths
        from ..sandbox.identity import UidRange

        blocked = unreachable_paths([*system_paths(), data_dir / "sessions"])
        if blocked:
            return fail(
                f"sandboxes run as host uids of their own and cannot pass through {blocked[0]}; "
                "run `lmc setup`, give it search permission for others (chmod o+x), or "
                "choose another --data-dir"
            )
        try:
            UidRange.reserved()
        except SandboxUnavailable as exc:
            return fail(str(exc))
    if not args.no_sandbox and os.geteuid() != 0:
        from ..sandbox.identity import per_session_processes

        if per_session_processes() is None:
            sys.stderr.write(
                "lmc serve: running unprivileged with no cgroup to write: every session "
                "runs as this user and shares one process limit (RLIMIT_NPROC), so one "
                "session's fork bomb starves the others\n"
            )
            if args.max_sessions > 1 and not args.allow_shared_limits:
                return fail(
                    "refusing --max-sessions > 1 with a shared process limit; run as root "
                    "(sessions then get host uids of their own), use --max-sessions 1, or "
                    "accept the shared limit with --allow-shared-limits"
                )
    token = None if args.no_auth else (args.token or os.environ.get("LMC_TOKEN") or None)
    generated = token is None and not args.no_auth
    if generated:
        token = secrets.token_urlsafe(32)
    limits = SessionLimits()
    if args.wall_seconds is not None:
        limits = replace(limits, wall_seconds=args.wall_seconds)
    try:
        settings = ServiceSettings(
            data_dir=data_dir,
            host=args.host,
            port=args.port,
            token=token,
            no_auth=args.no_auth,
            sandbox=not args.no_sandbox,
            allow_network=allow_network,
            network_default=args.network_default,
            max_sessions=args.max_sessions,
            idle_timeout=args.idle_timeout if args.idle_timeout > 0 else None,
            pool_size=args.pool_size,
            limits=limits,
        )
    except ValueError as exc:
        return fail(str(exc))
    if generated:
        sys.stdout.write(f"lmc serve: generated token: {token}\n")
    if args.no_sandbox:
        sys.stdout.write("lmc serve: --no-sandbox: sessions run WITHOUT isolation\n")
    sys.stdout.write(f"lmc serve: listening on http://{args.host}:{args.port}\n")
    sys.stdout.flush()
    serve(settings)
    return 0
