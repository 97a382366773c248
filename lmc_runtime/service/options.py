"""The options of ``lmc serve``: one table, from which its flags, environment
variables (``LMC_SERVE_<NAME>``), TOML keys (``<name>``) and ``--help`` are made.

The session limits are in :mod:`.limit_options`, what sessions run in and may
reach in :mod:`.reach_options`; ``GROUPS`` is how ``--help`` shows them all.
"""

from __future__ import annotations

from pathlib import Path

from ..web.connections import ConnectionLimits
from .limit_options import LIMIT_OPTIONS, size_option
from .option import Option
from .reach_options import REACH_OPTIONS
from .settings import ServiceSettings
from .values import (
    at_least,
    boolean,
    choice,
    integer,
    number,
    origins,
    path,
    text,
    unlimited,
)

__all__ = ["GROUPS", "LOG_FORMATS", "LOG_LEVELS", "OPTIONS", "TRANSCRIPT_SYNCS", "Option"]

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")
TRANSCRIPT_SYNCS = ("group", "run")


_CONNECTIONS = ConnectionLimits()
_SERVICE = ServiceSettings(data_dir=Path("/"), no_auth=True)


#: A shorter token is easy to guess, and redacting it from the logs garbles them.
MIN_TOKEN = 16


def _token(raw: object) -> str:
    token = text(raw)
    if len(token) < MIN_TOKEN:
        raise ValueError(
            f"a token must be at least {MIN_TOKEN} characters, not {len(token)} "
            "(give none to have one made up)"
        )
    return token


def _port(raw: object) -> int:
    port = integer(raw)
    if not 0 <= port <= 65535:
        raise ValueError(f"{raw!r} is not a port (0 to 65535)")
    return port


_SERVICE_OPTIONS: tuple[Option, ...] = (
    Option(
        "max_sessions",
        at_least(integer, 1),
        _SERVICE.max_sessions,
        "most sessions at once (the pool's among them)",
        metavar="N",
    ),
    Option(
        "max_checkpoints",
        at_least(integer, 0),
        _SERVICE.max_checkpoints,
        "most checkpoints a session keeps at once (0: none)",
        metavar="N",
    ),
    Option(
        "pool_size",
        at_least(integer, 0),
        _SERVICE.pool_size,
        "warm Python sessions kept ready, at least (0: no pool)",
        metavar="N",
    ),
    Option(
        "pool_max",
        at_least(integer, 0),
        _SERVICE.pool_max,
        "most warm sessions the pool grows to when sessions are asked for in bursts "
        "(within --max-sessions; never below --pool-size; --pool-size 0: no pool)",
        metavar="N",
    ),
    Option(
        "pool_cooldown",
        at_least(number, 0),
        _SERVICE.pool_cooldown,
        "seconds without a burst before the pool shrinks back to --pool-size",
        metavar="SECONDS",
    ),
    Option(
        "idle_timeout",
        unlimited(number, 0),
        _SERVICE.idle_timeout,
        "seconds before an idle session ends ('none' or 0: never)",
        metavar="SECONDS",
    ),
    size_option(
        "max_request_bytes",
        1024,
        _SERVICE.max_request_bytes,
        "largest request body or WebSocket frame",
    ),
    size_option("max_upload_bytes", 1, _SERVICE.max_upload_bytes, "largest uploaded file"),
    Option(
        "allowed_origins",
        origins,
        _SERVICE.allowed_origins,
        "browser origins allowed to connect, comma-separated",
        show="none",
        metavar="ORIGINS",
    ),
    Option("no_sandbox", boolean, False, "run sessions without bubblewrap (unsafe)", switch=True),
    Option(
        "no_fork_server",
        boolean,
        False,
        "start every sandboxed Python kernel afresh, not forked from the fork server "
        "(which a server running as root uses)",
        switch=True,
    ),
    Option(
        "allow_shared_limits",
        boolean,
        False,
        "allow --max-sessions > 1 where sessions cannot get limits of their own "
        "(an unprivileged server without cgroups shares one process limit)",
        switch=True,
    ),
)


_SERVER_OPTIONS: tuple[Option, ...] = (
    Option("host", text, "127.0.0.1", "address to listen on", metavar="HOST"),
    Option("port", _port, 8765, "port to listen on (0: any free port)", metavar="PORT"),
    Option(
        "data_dir",
        path,
        None,
        "sessions and transcripts",
        show="$XDG_DATA_HOME/lmc-runtime",
        metavar="DIR",
    ),
    Option(
        "token",
        _token,
        None,
        f"bearer token clients must send (at least {MIN_TOKEN} characters)",
        show="$LMC_TOKEN, else one made up and printed",
        also_env=("LMC_TOKEN",),
        metavar="TOKEN",
    ),
    Option("no_auth", boolean, False, "no token at all (loopback addresses only)", switch=True),
    Option("metrics_public", boolean, False, "/metrics answers without the token", switch=True),
    Option(
        "header_timeout",
        at_least(number, 0.1),
        _CONNECTIONS.header_timeout,
        "seconds a client has to send a request's headers",
        metavar="SECONDS",
    ),
    Option(
        "body_timeout",
        at_least(number, 0.1),
        _CONNECTIONS.body_timeout,
        "seconds between checks that a request body arrives at 1 KiB/s at least",
        metavar="SECONDS",
    ),
    Option(
        "log_level",
        choice(*LOG_LEVELS),
        "info",
        "least severe log level shown",
        metavar="|".join(LOG_LEVELS),
    ),
    Option(
        "log_format",
        choice(*LOG_FORMATS),
        "text",
        "text lines, or one JSON object a line",
        metavar="|".join(LOG_FORMATS),
    ),
)


_SCALE_OPTIONS: tuple[Option, ...] = (
    Option(
        "store",
        text,
        None,
        "where transcripts go: a postgresql:// URL shared by replicas",
        show="the Jan folder in --data-dir",
        metavar="URL",
    ),
    Option(
        "transcript_sync",
        choice(*TRANSCRIPT_SYNCS),
        "group",
        "fsync a run's record in the Jan folder within 10 ms after its final message "
        "(group), or before it (run)",
        metavar="|".join(TRANSCRIPT_SYNCS),
    ),
    Option(
        "gateway_url",
        text,
        None,
        "run Python and R kernels on this Jupyter Kernel or Enterprise Gateway",
        show="none: local kernels",
        also_env=("LMC_GATEWAY_URL",),
        metavar="URL",
    ),
    Option(
        "gateway_token",
        text,
        None,
        "token the gateway asks for",
        also_env=("LMC_GATEWAY_TOKEN",),
        metavar="TOKEN",
    ),
    Option(
        "replica",
        text,
        None,
        "this replica's name behind a balancer; it prefixes the ids of its sessions",
        metavar="NAME",
    ),
)


_E2B_OPTIONS: tuple[Option, ...] = (
    Option("no_e2b", boolean, False, "do not speak E2B's API", switch=True),
    Option(
        "e2b_domain",
        text,
        None,
        "behind a TLS proxy: the domain of E2B_DOMAIN (api.<domain>, <port>-<id>.<domain>)",
        show="none: E2B_API_URL and E2B_SANDBOX_URL",
        metavar="DOMAIN",
    ),
    Option(
        "e2b_require_secure",
        boolean,
        False,
        "refuse E2B sandboxes created without secure=True (their traffic carries a token)",
        switch=True,
    ),
)


#: The options in the groups ``--help`` shows them in, with the groups' titles.
GROUPS: tuple[tuple[str, tuple[Option, ...]], ...] = (
    ("server (where it listens, who may connect, what it logs)", _SERVER_OPTIONS),
    ("session limits (each session's defaults, and the most it may ask for)", LIMIT_OPTIONS),
    ("sessions, the pool and the sandbox", _SERVICE_OPTIONS),
    ("what sessions run in and may reach (environments, network, secrets)", REACH_OPTIONS),
    ("transcripts, gateways and replicas", _SCALE_OPTIONS),
    ("E2B's API (the E2B SDKs, pointed at this server)", _E2B_OPTIONS),
)

#: Every option, in the order ``--help`` lists them.
OPTIONS: tuple[Option, ...] = tuple(option for _, options in GROUPS for option in options)
