"""The names of the code a kernel runs, kept between fork servers.

A fork server's probe (``_hot.py``) costs about a third of a second of its
start. What it finds is the same for every fork server of one installation, so
its answer is kept, as the names of the code objects that ran (``_gather.py``),
in a folder of the runtime's own (``ForkServer``'s ``cache``), keyed by all
that could change it: the Python, the kernel's command line, the file, size and
modification time of every module the fork server imported, and the source of
the kernel's files it compiled. A fork server whose key is kept gathers by the
kept names, and forks no probe.

The folder is the host's, never a sandbox's; it is opened once, without
following a link, and used only if this user owns it and no other may write
in it. Its files are opened by that descriptor, without following a link, and
written whole or not at all (a new file renamed over the old). What they hold
only chooses which code objects are copied: a wrong file costs memory, nothing
else. The newest :data:`_KEPT` files are kept.

Stdlib only; imported by the fork server by its file name.
"""

import contextlib
import hashlib
import json
import os
import secrets
import stat
import sys
from collections.abc import Iterable, Iterator

__all__ = ["key", "load", "save"]

#: Changed when what is kept, or how the probe finds it, changes.
_FORMAT = "lmc-hot-2"
#: The most files kept in the folder, and the largest read.
_KEPT = 8
_LARGEST = 8 << 20
_PREFIX, _SUFFIX = "hot-", ".json"


def key(argv: list[str], compiled: dict[str, tuple[bytes, object]], *files: str) -> str:
    """What the probe's answer depends on, hashed: see the module's docstring;
    ``files`` are more (the probe's own)."""
    digest = hashlib.sha256()
    for part in (_FORMAT, sys.version, sys.executable, *argv):
        digest.update(part.encode(errors="surrogateescape") + b"\0")
    modules = sorted(sys.modules.items(), key=lambda item: item[0])
    named = [(name, getattr(module, "__file__", None)) for name, module in modules]
    for name, file in [*named, *(("", file) for file in files)]:
        if not isinstance(file, str):
            continue
        try:
            info = os.stat(file)
            said = f"{name}\0{file}\0{info.st_mtime_ns}\0{info.st_size}\0"
        except OSError:
            said = f"{name}\0{file}\0-\0"
        digest.update(said.encode(errors="surrogateescape"))
    for path, (source, _) in sorted(compiled.items()):
        digest.update(path.encode(errors="surrogateescape") + b"\0")
        digest.update(hashlib.sha256(source).digest())
    return digest.hexdigest()


@contextlib.contextmanager
def _folder(path: str, make: bool) -> Iterator[int | None]:
    """``path`` opened (None if it cannot be, or is not this user's alone)."""
    if make:
        with contextlib.suppress(OSError):
            os.makedirs(path, mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    try:
        info = os.fstat(fd)
        mine = info.st_uid == os.geteuid() and not info.st_mode & 0o022
        yield fd if mine else None
    finally:
        os.close(fd)


def load(path: str, wanted: str) -> set[tuple[str, int, str, int]] | None:
    """The names kept in ``path`` under the key ``wanted``, or None."""
    with _folder(path, make=False) as fd:
        if fd is None:
            return None
        try:
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # not a pipe's wait
            file = os.open(_PREFIX + wanted + _SUFFIX, flags, dir_fd=fd)
        except OSError:
            return None
        with os.fdopen(file, "rb") as read:
            if not stat.S_ISREG(os.fstat(file).st_mode):
                return None
            data = read.read(_LARGEST + 1)
    try:
        kept = json.loads(data) if len(data) <= _LARGEST else None
        if not isinstance(kept, dict) or kept.get("key") != wanted:
            return None
        return {(str(f), int(n), str(q), int(c)) for f, n, q, c in kept["names"]}
    except (ValueError, TypeError, KeyError):
        return None


def save(path: str, wanted: str, names: Iterable[tuple[str, int, str, int]]) -> bool:
    """Keep ``names`` in ``path`` under the key ``wanted``; whether they were."""
    data = json.dumps({"key": wanted, "names": sorted(names)}).encode()
    with _folder(path, make=True) as fd:
        if fd is None:
            return False
        part = f".{_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            with os.fdopen(os.open(part, flags, 0o600, dir_fd=fd), "wb") as file:
                file.write(data)
            os.replace(part, _PREFIX + wanted + _SUFFIX, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(part, dir_fd=fd)
            return False
        _pruned(fd)
        return True


def _pruned(fd: int) -> None:
    """Only the newest :data:`_KEPT` files kept."""
    kept: list[tuple[int, str]] = []
    for name in os.listdir(fd):
        if name.startswith(_PREFIX) and name.endswith(_SUFFIX):
            with contextlib.suppress(OSError):
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                kept.append((info.st_mtime_ns, name))
    for _, name in sorted(kept, reverse=True)[_KEPT:]:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=fd)
