"""``POST /v1/sessions/{id}/fork``: a new session made from another one.

The new session is made exactly as any other (its own sandbox, host uid,
cgroup, limits and lifetime), then gets a copy of the parent's working
directory and its Python state. A process cannot move between sandboxes (their
uids and user and PID namespaces differ), so the state is carried by value: the
parent's kernel pickles each of its variables (with cloudpickle where the
kernel has it, so functions and classes defined in cells go too) into a file of
its working directory, the copy carries the file over, and the new kernel loads
it and deletes it. Modules are imported again by name. What did not carry
(objects that cannot be pickled: generators, open files, sockets, locks;
threads; subprocesses; module-level state changed since the import) is listed
in a note on the fork's first run. See docs/service/api.md.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from typing import TYPE_CHECKING

import anyio

from ..backends.base import ExecutionOptions
from ..errors import CheckpointFailed
from ..sandbox import fileops
from ..sandbox.fileops._copy import copy_tree, empty_tree
from .errors import CapacityExceeded, SessionEnded, ShuttingDown

if TYPE_CHECKING:
    from ..computer import Computer
    from .manager import SessionManager
    from .session import ServiceSession

__all__ = ["fork_session"]

logger = logging.getLogger(__name__)

#: How long the hidden runs that save and load the state may take, in seconds.
_STATE_TIMEOUT = 120.0

_DUMP = """
def __lmc_fork_dump__(path):
    import json, os, pickle, types
    try:
        import cloudpickle as pickler
    except ImportError:
        pickler = pickle
    ip = get_ipython()
    # IPython's own names (not user_ns_hidden: a revived kernel hides the state it got).
    own = {"In", "Out", "exit", "quit", "get_ipython"}
    state, modules, left = {}, {}, []
    for name, value in list(ip.user_ns.items()):
        if name.startswith("_") or name in own:
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
            continue
        try:
            state[name] = pickler.dumps(value)
        except Exception:
            left.append(f"{name} ({type(value).__name__})")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        pickle.dump({"state": state, "modules": modules, "left": left}, out)
    print(json.dumps({"carried": len(state) + len(modules), "left": left}))
try:
    __lmc_fork_dump__(%(path)r)
finally:
    del __lmc_fork_dump__
"""

_LOAD = """
def __lmc_fork_load__(path, parent):
    import importlib, json, os, pickle, sys
    try:
        import cloudpickle  # what its pickles may need
    except ImportError:
        pass
    with open(path, "rb") as saved:
        data = pickle.load(saved)
    os.unlink(path)
    ip = get_ipython()
    left = list(data["left"])
    for name, module in data["modules"].items():
        try:
            ip.user_ns[name] = importlib.import_module(module)
        except Exception:
            left.append(f"{name} (module {module})")
    for name, blob in data["state"].items():
        try:
            ip.user_ns[name] = pickle.loads(blob)
        except Exception:
            left.append(name)
    note = (
        f"[lmc] this session is a fork of {parent}: its variables were copied by value "
        "and its modules imported again (module-level state changed since, threads, "
        "subprocesses and open sockets or files are not carried)"
    )
    if left:
        note += "; not carried: " + ", ".join(left)

    def pre_run_cell(info=None):
        ip.events.unregister("pre_run_cell", pre_run_cell)
        sys.stderr.write(note + "\\n")

    ip.events.register("pre_run_cell", pre_run_cell)
    print(json.dumps({"left": left}))
try:
    __lmc_fork_load__(%(path)r, %(parent)r)
finally:
    del __lmc_fork_load__
"""


async def fork_session(manager: SessionManager, parent: ServiceSession) -> ServiceSession:
    """A new session with ``parent``'s working directory and Python state (the
    parent must not be running code: :class:`SessionBusy`)."""
    if manager.shutting_down:
        raise ShuttingDown()
    claim = parent.acquire()
    try:
        if len(manager.sessions) + manager._starting >= manager.settings.max_sessions:
            raise CapacityExceeded(manager.settings.max_sessions)
        name = f".lmc-fork-{uuid.uuid4().hex[:12]}.pickle"
        parent_computer = _computer(parent)
        python = "python" in parent.languages  # else only the files are carried
        if python:
            parent_path = parent.sandbox.launcher.inside(parent.sandbox.work_dir / name)
            await _hidden(parent_computer, _DUMP % {"path": parent_path})
        try:
            child = await _new_session(manager, parent)
            try:
                await _carry_files(parent, child)
                child_path = child.sandbox.launcher.inside(child.sandbox.work_dir / name)
                if python:
                    code = _LOAD % {"path": child_path, "parent": parent.id}
                    await _hidden(_computer(child), code)
            except BaseException:
                manager.sessions.pop(child.id, None)
                child.stop("its fork failed")
                raise
        finally:
            with contextlib.suppress(fileops.FileOpError, OSError):
                await anyio.to_thread.run_sync(
                    lambda: fileops.remove(parent.sandbox.work_dir, name, recursive=False)
                )
        return child
    finally:
        claim.release()


def _computer(session: ServiceSession) -> Computer:
    if session.computer is None:
        raise SessionEnded(session.id)
    return session.computer


async def _new_session(manager: SessionManager, parent: ServiceSession) -> ServiceSession:
    """A session made as ``parent`` was (its policy, languages and folder)."""
    return await manager.open_session(
        parent.policy,
        list(parent.languages),
        parent.cwd,
        title=f"fork of {parent.id}",
        extra={"forked_from": parent.id},
    )


async def _carry_files(parent: ServiceSession, child: ServiceSession) -> None:
    """The parent's working directory, copied over the child's (within its disk limit)."""
    room = await child.sandbox.disk_room()
    source, target, owner = parent.sandbox.work_dir, child.sandbox.work_dir, child.sandbox.owner

    def carry() -> None:
        empty_tree(target)
        copy_tree(source, target, budget=room, owner=owner)

    await anyio.to_thread.run_sync(carry)


async def _hidden(computer: Computer, code: str) -> dict[str, object]:
    """Run ``code`` hidden in the Python kernel; the JSON object it printed."""
    session = await computer._sessions.get("python")
    if session is None:
        raise SessionEnded("python")
    options = ExecutionOptions(
        reply_to="lmc-fork", timeout=_STATE_TIMEOUT, track_lines=False, hidden=True
    )
    said: list[str] = []
    async for message in session.execute(code, options):
        if message.type == "console" and isinstance(message.content, str):
            said.append(message.content)
    for line in "".join(said).splitlines():
        with contextlib.suppress(ValueError):
            reported = json.loads(line)
            if isinstance(reported, dict):
                return reported
    tail = "".join(said).strip()[-300:] or "nothing"
    logger.warning("the fork's state transfer said: %s", tail)
    raise CheckpointFailed(f"the Python state was not carried: {tail}")
