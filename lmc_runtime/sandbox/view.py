"""What a session's code sees of itself inside the sandbox: a user named
``user`` with its home, ``/home/user``, as its working directory, and a
runtime folder, ``/run/lmc``, for the files the interpreters keep for
themselves (IPython's profile, configuration, caches, installed packages).
The host's own folders of the session are there too: the control folder
(connection files, cells, FIFOs, read-only) at ``/run/control`` and the
folder the interpreters bind their sockets in at ``/run/shared``.

All are folders of the session's disk (so its limit counts them), bound at
these fixed places: no path the code can read (its cwd, its environment,
``sys.path``, the command lines and open files of its processes, the mount
points) names where the host keeps the session. A path the host hands in (a
connection file, a FIFO, a socket's) is translated first (:meth:`SandboxView.inside`,
:meth:`SandboxView.translate`). The runtime folder is outside the home, so
the files API, which lists the home, shows only what the code made there.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

from ..egress.local import SYSTEM_BUNDLES
from .policy import EgressTrust, SandboxPolicy, session_env

__all__ = [
    "SANDBOX_CONTROL",
    "SANDBOX_HOME",
    "SANDBOX_RUNTIME",
    "SANDBOX_SHARED",
    "SANDBOX_USER",
    "SandboxView",
    "runtime_env",
    "user_site",
    "view_env",
]

#: The code's user name, and where its home (the session's working directory) is.
SANDBOX_USER = "user"
SANDBOX_HOME = "/home/user"
#: Where the interpreters' own files of the session are.
SANDBOX_RUNTIME = "/run/lmc"
#: Where the host's files of the session are (read-only), and the interpreters' sockets.
SANDBOX_CONTROL = "/run/control"
SANDBOX_SHARED = "/run/shared"
#: The resolver's configuration a session under an egress policy sees.
RESOLV_CONF = "/etc/resolv.conf"
#: Where a session that trusts the egress CA sees its certificate, and a bundle
#: of the system's CAs with it (which is also bound over the system's bundle).
SANDBOX_CA = "/run/egress/ca.pem"
SANDBOX_CA_BUNDLE = "/run/egress/ca-bundle.pem"
#: The shell profile beside the interpreters' commands (:mod:`.commands`): bash
#: reads it (``BASH_ENV``) when it runs a command, after /etc/profile in a login
#: shell (E2B's commands run in one).
PROFILE_NAME = "profile.sh"


def user_site(userbase: str, version: str | None = None) -> str:
    """The site-packages folder of Python's user scheme under ``userbase``, for
    Python ``version`` (``major.minor``; None: this one)."""
    version = version or f"{sys.version_info[0]}.{sys.version_info[1]}"
    return f"{userbase}/lib/python{version}/site-packages"


def runtime_env(runtime: str, path: str, *, network: bool = True) -> dict[str, str]:
    """The variables that keep the interpreters' own files in ``runtime``, and
    make ``pip install`` install there (into the user scheme, whose folder is
    on every Python's ``sys.path``). ``path``: the ``PATH`` to extend. Without
    ``network`` pip tries each index once: retrying cannot help."""
    userbase = f"{runtime}/local"
    env = {
        "IPYTHONDIR": f"{runtime}/ipython",
        "JUPYTER_CONFIG_DIR": f"{runtime}/jupyter",
        "JUPYTER_DATA_DIR": f"{runtime}/jupyter-data",
        "JUPYTER_RUNTIME_DIR": f"{runtime}/jupyter-runtime",
        "MPLCONFIGDIR": f"{runtime}/matplotlib",
        "XDG_CONFIG_HOME": f"{runtime}/config",
        "XDG_CACHE_HOME": f"{runtime}/cache",
        "XDG_DATA_HOME": f"{runtime}/share",
        "XDG_STATE_HOME": f"{runtime}/state",
        "NPM_CONFIG_CACHE": f"{runtime}/npm",
        "PYTHONUSERBASE": userbase,
        "PIP_NO_COLOR": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_PROGRESS_BAR": "off",
        "PATH": f"{userbase}/bin:{path}",
    }
    if not network:
        env["PIP_RETRIES"] = "0"
    if sys.prefix != sys.base_prefix:
        # A virtualenv hides the user scheme: install into its folder directly,
        # and put it on sys.path by name.
        env["PIP_TARGET"] = env["PYTHONPATH"] = user_site(userbase)
    else:
        env["PIP_USER"] = "1"
    return env


def trust_env(trust: EgressTrust, *, inside: bool) -> dict[str, str]:
    """The variables that make a session's tools trust the egress CA: ``inside``
    the sandbox, its files where it binds them; else (no sandbox) the host's."""
    ca, bundle = (SANDBOX_CA, SANDBOX_CA_BUNDLE) if inside else (str(trust.ca), str(trust.bundle))
    return {
        "SSL_CERT_FILE": bundle,  # OpenSSL's: Python's ssl, curl, git...
        "REQUESTS_CA_BUNDLE": bundle,
        "CURL_CA_BUNDLE": bundle,
        "PIP_CERT": bundle,
        "NODE_EXTRA_CA_CERTS": ca,  # added to node's own
    }


def view_env(
    host: Mapping[str, str],
    policy: SandboxPolicy,
    home: str,
    runtime: str,
    commands: str | None = None,
) -> dict[str, str]:
    """A session's environment: :func:`~.policy.session_env` with ``home``,
    the runtime folder's variables, then the policy's own (which win).
    ``commands``: a folder put first on ``PATH`` (see :func:`write_commands`)."""
    env = session_env(host, policy, Path(home))
    path = env["PATH"]
    environment = policy.environment
    if environment is not None:  # its commands before the host's, after the session's own
        path = ":".join([*environment.path_entries(), path])
    path = path if commands is None else f"{commands}:{path}"
    extra = runtime_env(runtime, path, network=policy.network is not False)
    if environment is not None:
        extra.pop("PIP_USER", None)
        extra.update(environment.variables(runtime))
    if commands is not None:
        extra["BASH_ENV"] = str(PurePosixPath(commands).parent / PROFILE_NAME)
    if policy.trust is not None:
        extra.update(trust_env(policy.trust, inside=runtime == SANDBOX_RUNTIME))
    env.update((name, value) for name, value in extra.items() if name not in policy.env)
    return env


_PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    "{user}:x:{uid}:{gid}:{user}:{home}:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
_GROUP = "root:x:0:\n{user}:x:{gid}:\nnogroup:x:65534:\n"


@dataclass(frozen=True)
class SandboxView:
    """Host folders and files shown at fixed places inside the sandbox:
    ``home`` at :data:`SANDBOX_HOME`, ``runtime`` at :data:`SANDBOX_RUNTIME`,
    ``control`` (read-only) at :data:`SANDBOX_CONTROL`, ``shared`` at
    :data:`SANDBOX_SHARED`, ``passwd`` and ``group`` as ``/etc``'s."""

    home: Path
    runtime: Path
    passwd: Path
    group: Path
    control: Path | None = None
    shared: Path | None = None
    #: The egress CA's files, when the session trusts it.
    trust: EgressTrust | None = None
    #: A ``resolv.conf`` naming the namespace's own resolver (under an egress policy).
    resolv: Path | None = None

    @cached_property
    def _places(self) -> list[tuple[str, str]]:
        """(host folder, where it is seen) for each bound folder, the host's by
        its path as given and as resolved (``realpath``), longest first. Resolved
        once: the folders and every folder above them are the host's (the sandbox
        writes inside them, never in their parents), and a command line's every
        argument is translated."""
        bound = [
            (self.home, SANDBOX_HOME),
            (self.runtime, SANDBOX_RUNTIME),
            (self.control, SANDBOX_CONTROL),
            (self.shared, SANDBOX_SHARED),
        ]
        places = set()
        for host, seen in bound:
            if host is not None:
                places.add((str(host), seen))
                places.add((os.path.realpath(host), seen))
        return sorted(places, key=lambda place: len(place[0]), reverse=True)

    def inside(self, path: Path) -> str:
        """Where the host's ``path`` is seen inside (unchanged if not in a bound folder)."""
        text = str(path)
        for host, seen in self._places:
            if text == host or text.startswith(host + "/"):
                return str(PurePosixPath(seen, PurePosixPath(text).relative_to(host)))
        return text

    @cached_property
    def _place_pattern(self) -> tuple[re.Pattern[str], dict[str, str]]:
        """One pattern for every host folder (longest first, so the deepest
        matches), and where each is seen: a command line is translated in one pass
        (each path once), not one compiled pattern per folder and argument."""
        seen = dict(self._places)
        alternatives = "|".join(re.escape(host) for host, _ in self._places)
        return re.compile(f"(?:{alternatives})(?=/|$)"), seen

    def translate(self, argument: str) -> str:
        """``argument`` of a command line with every path in a bound folder (whole,
        after ``=``, in a ``file://`` address) as it is seen inside."""
        pattern, seen = self._place_pattern
        return pattern.sub(lambda found: seen[found.group(0)], argument)

    def bwrap_options(self) -> list[str]:
        """bwrap's options binding them (after ``/etc``, ``/run`` and the rest)."""
        options = [
            *("--bind", str(self.home), SANDBOX_HOME),
            *("--bind", str(self.runtime), SANDBOX_RUNTIME),
        ]
        if self.control is not None:
            options += ["--ro-bind", str(self.control), SANDBOX_CONTROL]
        if self.shared is not None:
            options += ["--bind", str(self.shared), SANDBOX_SHARED]
        return [
            *options,
            *("--ro-bind", str(self.passwd), "/etc/passwd"),
            *("--ro-bind", str(self.group), "/etc/group"),
            *self._trust_options(),
            *self._resolv_options(),
        ]

    def _resolv_options(self) -> list[str]:
        """The bind of ``resolv`` over the host's ``/etc/resolv.conf`` where that is a
        plain file. Elsewhere (a link into ``/run``, as systemd-resolved makes it)
        DNS works all the same: every query on port 53 goes to the namespace's
        resolver, and a resolver without ``resolv.conf`` asks 127.0.0.1."""
        if self.resolv is None or not os.path.isfile(RESOLV_CONF) or os.path.islink(RESOLV_CONF):
            return []
        return ["--ro-bind", str(self.resolv), RESOLV_CONF]

    def write_resolv(self) -> None:
        """Write ``resolv`` (readable by all): the namespace's resolver only, no
        search domains of the host's. Blocking: the host's own folder."""
        assert self.resolv is not None
        fd = os.open(self.resolv, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write("nameserver 127.0.0.1\noptions edns0\n")

    def _trust_options(self) -> list[str]:
        """Binds of the egress CA's files at their places, and of its bundle over
        the system's (where the host has one, a plain file): tools that read only
        the system's bundle trust it too."""
        if self.trust is None:
            return []
        options = ["--ro-bind", str(self.trust.ca), SANDBOX_CA]
        options += ["--ro-bind", str(self.trust.bundle), SANDBOX_CA_BUNDLE]
        for system in SYSTEM_BUNDLES:
            if os.path.isfile(system) and not os.path.islink(system):
                options += ["--ro-bind", str(self.trust.bundle), system]
        return options

    def write_accounts(self, uid: int, gid: int) -> None:
        """Write ``passwd`` and ``group`` (readable by all): the code's user and
        group, root and nobody. Blocking: the host's own folder."""
        names = {"user": SANDBOX_USER, "uid": uid, "gid": gid, "home": SANDBOX_HOME}
        for path, text in ((self.passwd, _PASSWD), (self.group, _GROUP)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text.format(**names))

    def make_runtime(self, owner: tuple[int, int] | None, folders: Iterable[str]) -> None:
        """Make the runtime folder and ``folders`` in it (relative paths, with
        their parents), owned by ``owner`` when given. Blocking."""
        self.runtime.mkdir(mode=0o700, exist_ok=True)
        made = [self.runtime]
        for folder in folders:
            path = self.runtime
            for part in PurePosixPath(folder).parts:
                path = path / part
                path.mkdir(mode=0o700, exist_ok=True)
                made.append(path)
        if owner is not None:
            for path in made:
                os.chown(path, *owner, follow_symlinks=False)
