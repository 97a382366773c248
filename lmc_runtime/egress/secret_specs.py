"""The secrets an operator gives ``lmc serve``: ``--secret NAME:HOST[,HOST...][@FILE]``.

``NAME`` is the variable a session sees (a placeholder in it); the hosts are the
only ones its real value is sent to (a name, ``*.`` a wildcard for its
subdomains, an optional ``:PORT``; without one, 443 and 80). The value is the
server's environment variable ``NAME``, or the contents of ``FILE`` (one
trailing newline dropped): never the command line. Nothing here puts a value
into a message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_PORTS",
    "HostRule",
    "SecretError",
    "SecretSpec",
    "load_values",
    "parse_secret",
    "parse_secrets",
]

#: The ports a host without one is matched on.
DEFAULT_PORTS = (443, 80)
#: The longest value taken (a header's value must fit a request's head).
MAX_VALUE = 16 * 1024

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST = re.compile(rf"(\*\.)?(?:{_LABEL}\.)*{_LABEL}")
#: What a value may hold: what a header's value may (no control characters but tab).
_VALUE = re.compile(r"[\t\x20-\x7e\x80-\U0010ffff]+")


class SecretError(ValueError):
    """A ``--secret`` is malformed, or its value is missing or unusable."""


@dataclass(frozen=True)
class HostRule:
    """A host a secret goes to: ``name`` (``*.example.com`` matches its
    subdomains, not itself), on ``port`` (None: 443 or 80)."""

    name: str
    port: int | None = None

    def matches(self, name: str, port: int) -> bool:
        name = name.lower().rstrip(".")
        if port not in ((self.port,) if self.port is not None else DEFAULT_PORTS):
            return False
        if self.name.startswith("*."):
            return name.endswith(self.name[1:]) and len(name) > len(self.name) - 1
        return name == self.name

    def __str__(self) -> str:
        return self.name if self.port is None else f"{self.name}:{self.port}"


@dataclass(frozen=True)
class SecretSpec:
    """One secret: the variable's ``name``, the ``hosts`` it goes to, and the
    ``file`` its value is read from (None: the server's variable ``name``)."""

    name: str
    hosts: tuple[HostRule, ...]
    file: Path | None = None

    def goes_to(self, name: str, port: int) -> bool:
        return any(rule.matches(name, port) for rule in self.hosts)

    def __str__(self) -> str:
        hosts = ",".join(str(rule) for rule in self.hosts)
        return f"{self.name}:{hosts}" + (f"@{self.file}" if self.file else "")


def _host(text: str) -> HostRule:
    name, colon, port = text.strip().lower().rstrip(".").partition(":")
    if not _HOST.fullmatch(name):
        raise SecretError(f"{text!r} is not a host name (a name, or *.name)")
    if not colon:
        return HostRule(name)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise SecretError(f"{text!r}: {port!r} is not a port")
    return HostRule(name, int(port))


def parse_secret(text: str) -> SecretSpec:
    """``NAME:HOST[,HOST...][@FILE]`` as a :class:`SecretSpec`."""
    name, colon, rest = text.strip().partition(":")
    if not colon or not _NAME.fullmatch(name):
        raise SecretError(
            f"{text!r}: give NAME:HOST[,HOST...][@FILE], NAME a variable name "
            "(the value comes from the server's variable NAME, or from FILE)"
        )
    hosts, at, file = rest.partition("@")
    rules = tuple(_host(host) for host in hosts.split(",") if host.strip())
    if not rules:
        raise SecretError(f"{text!r}: name at least one host the secret goes to")
    if at and not file.strip():
        raise SecretError(f"{text!r}: a file's path follows '@'")
    return SecretSpec(name, rules, Path(file.strip()).expanduser() if at else None)


def parse_secrets(raw: object) -> tuple[SecretSpec, ...]:
    """Several secrets: a list (repeated flags, a TOML list) or a string of
    them separated by ';' (an environment variable)."""
    items = raw.split(";") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise SecretError(f"{raw!r} is not a list of NAME:HOST[,HOST...][@FILE]")
    specs = tuple(parse_secret(item) for item in items if item.strip())
    names = [spec.name for spec in specs]
    for name in names:
        if names.count(name) > 1:
            raise SecretError(f"the secret {name} is given more than once")
    return specs


def _read(spec: SecretSpec, environ: Mapping[str, str]) -> str:
    if spec.file is None:
        value = environ.get(spec.name)
        if not value:
            raise SecretError(
                f"--secret {spec.name}: the server's environment has no variable "
                f"{spec.name} (its value), or it is empty; or give @FILE"
            )
        return value
    try:
        data = spec.file.read_bytes()
    except OSError as exc:
        raise SecretError(
            f"--secret {spec.name}: cannot read {spec.file}: {exc.strerror or exc}"
        ) from None
    try:
        value = data.decode()
    except UnicodeDecodeError:
        raise SecretError(f"--secret {spec.name}: {spec.file} is not UTF-8 text") from None
    value = value[:-1] if value.endswith("\n") else value
    value = value[:-1] if value.endswith("\r") else value
    if not value:
        raise SecretError(f"--secret {spec.name}: {spec.file} is empty")
    return value


def load_values(specs: tuple[SecretSpec, ...], environ: Mapping[str, str]) -> dict[str, bytes]:
    """Each secret's value, by name, as a header carries it (UTF-8);
    :class:`SecretError` (never holding a value) for one missing or unusable."""
    values = {}
    for spec in specs:
        value = _read(spec, environ)
        if len(value) > MAX_VALUE:
            raise SecretError(f"--secret {spec.name}: longer than {MAX_VALUE} characters")
        if not _VALUE.fullmatch(value):
            raise SecretError(
                f"--secret {spec.name}: its value has a control character "
                "(a line break?); it must fit in an HTTP header"
            )
        values[spec.name] = value.encode()
    return values
