"""The code contexts of one E2B sandbox.

A default context per language is the session's own Computer (its runs are the
session's, recorded in its transcript; one at a time, as the session runs
them). A context made by ``POST /contexts`` is a Computer of its own, made by
the session's sandbox (:meth:`~lmc_runtime.sandbox.Sandbox.computer`): the same
guard, cgroup, disk quota, identity and view as the session's, so every limit
of the sandbox holds for all its contexts together, and folders of its own for
its interpreters' files (:mod:`.folders`). It lives in a task of the
door's task group, ends when it is removed, and with the sandbox
(``sandbox.closers``).

Runs in one context queue, as in E2B's server; runs in different contexts may
run at once. A sandbox has at most :data:`MAX_CONTEXTS` contexts of its own.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import anyio
from anyio.abc import TaskStatus

from ...computer import Computer
from ...sandbox.fileops import make_directory
from ...sandbox.view import SANDBOX_HOME
from ..door import Door
from ..errors import E2BError
from ..registry import E2BSandbox
from .folders import make_folders, remove_folders
from .languages import chdir_code, lmc_language_of

__all__ = ["MAX_CONTEXTS", "Context", "Contexts", "contexts_of"]

logger = logging.getLogger(__name__)

#: How many contexts of its own (besides the defaults) a sandbox may have.
MAX_CONTEXTS = 8
#: The layer's key in ``E2BSandbox.layers``.
LAYER = "interpreter"
#: The languages whose default context is listed from the start, as E2B's server
#: makes them when it starts.
_LISTED_DEFAULTS = ("python", "javascript")


@dataclass(eq=False)
class Context:
    """One context: a language's interpreter and where its code runs."""

    id: str
    language: str  # E2B's name
    lmc_language: str
    cwd: str
    default: bool
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    computer: Computer | None = None
    stop: anyio.Event = field(default_factory=anyio.Event)
    closed: anyio.Event = field(default_factory=anyio.Event)
    #: The system properties a Java run's own ``envs`` set last (cleared by the next).
    java_properties: frozenset[str] = frozenset()

    def info(self) -> dict[str, str]:
        return {"id": self.id, "language": self.language, "cwd": self.cwd}


class Contexts:
    """The contexts of one sandbox."""

    def __init__(self, door: Door, sandbox: E2BSandbox) -> None:
        self.door = door
        self.sandbox = sandbox
        #: The session's own Computer runs one execution at a time.
        self.session_lock = anyio.Lock()
        self._contexts: dict[str, Context] = {}
        self._defaults: dict[str, Context] = {}
        self._starting = 0
        self._made = 0
        self._closing = False
        for language in _LISTED_DEFAULTS:
            if self._runs(language):
                self.default(language)

    def _runs(self, language: str) -> bool:
        computer = self.sandbox.session.computer
        return computer is not None and lmc_language_of(language, computer.registry) in (
            self.sandbox.session.languages
        )

    def lmc_language(self, language: str) -> str:
        """lmc's name of E2B's ``language``; a 400 naming what runs here otherwise."""
        computer = self.sandbox.session.computer
        if computer is None:
            raise E2BError(f"sandbox {self.sandbox.shown} has ended", 502)
        name = lmc_language_of(language, computer.registry)
        if name is None or name not in self.sandbox.session.languages:
            runs = ", ".join(self.sandbox.session.languages)
            raise E2BError(
                f"language {language[:40]!r} cannot run in this sandbox; it runs {runs}", 400
            )
        return name

    def list(self) -> list[Context]:
        return [*self._defaults.values(), *self._contexts.values()]

    def get(self, context_id: str) -> Context:
        for context in self.list():
            if context.id == context_id:
                return context
        raise E2BError(f"context {context_id[:64]!r} was not found", 404)

    def default(self, language: str) -> Context:
        """The default context of ``language`` (E2B's name), made on first use."""
        lmc = self.lmc_language(language)
        context = self._defaults.get(language)
        if context is None:
            context = Context(
                id=uuid.uuid4().hex,
                language=language,
                lmc_language=lmc,
                cwd=SANDBOX_HOME,
                default=True,
            )
            self._defaults[language] = context
        return context

    async def create(self, language: str, cwd: str) -> Context:
        """A new context; a 429 past :data:`MAX_CONTEXTS`."""
        lmc = self.lmc_language(language)
        shown, inside = _placed(cwd)
        if self._closing:
            raise E2BError(f"sandbox {self.sandbox.shown} is ending", 502)
        if len(self._contexts) + self._starting >= MAX_CONTEXTS:
            raise E2BError(
                f"this sandbox has {MAX_CONTEXTS} code contexts, as many as it may have: "
                "remove one first",
                429,
            )
        context = Context(
            id=uuid.uuid4().hex, language=language, lmc_language=lmc, cwd=shown, default=False
        )
        self._starting += 1
        try:
            host_cwd = await self._host_cwd(inside)
            await self.door.sandboxes.start_task(self._serve, context, host_cwd)
        finally:
            self._starting -= 1
        self._contexts[context.id] = context
        if self._closing:  # the sandbox ended while it started
            await self.remove(context.id)
            raise E2BError(f"sandbox {self.sandbox.shown} is ending", 502)
        if inside is None:
            await self._chdir(context)
        return context

    async def _host_cwd(self, inside: str | None) -> Path:
        """Where a context's interpreters start on the host: the folder ``inside``
        the sandbox's home (made, with its parents), or the home itself."""
        sandbox = self.sandbox.session.sandbox
        if not inside:
            return sandbox.work_dir / self.sandbox.session.cwd
        owner = sandbox.owner

        def make() -> None:
            make_directory(sandbox.work_dir, inside, parents=True, owner=owner)

        try:
            await anyio.to_thread.run_sync(make)
        except OSError as exc:
            raise E2BError(f"the context's cwd could not be made: {exc.strerror or exc}") from exc
        return sandbox.work_dir / inside

    async def _chdir(self, context: Context) -> None:
        """Go to a ``cwd`` outside the home, as E2B's server does; a 400 if it cannot."""
        computer = context.computer
        code = chdir_code(context.language, context.cwd)
        if computer is None or code is None:
            return
        failed: str | None = None
        async for out in computer.arun(context.lmc_language, code, timeout=30):
            if out.is_final and (out.extras or {}).get("status") != "ok":
                failed = str((out.extras or {}).get("status"))
        if failed is not None:
            await self.remove(context.id)
            raise E2BError(f"the context cannot work in {context.cwd!r} ({failed})", 400)

    async def _serve(self, context: Context, cwd: Path, *, task_status: TaskStatus[None]) -> None:
        """The context's Computer, open until the context is removed."""
        session = self.sandbox.session
        self._made += 1
        folder = f"ctx{self._made}"
        control, shared = await anyio.to_thread.run_sync(make_folders, session.sandbox, folder)
        computer = session.sandbox.computer(
            outputs_at=f"/v1/sessions/{session.id}/outputs/",
            cwd=cwd,
            work_dir=control,
            shared_dir=shared,
            **session._kernels(),
        )
        try:
            async with computer:
                context.computer = computer
                task_status.started()
                await context.stop.wait()
        except Exception:
            if context.computer is None:
                raise  # it did not start: the request says so
            logger.warning("a code context of sandbox %s failed", self.sandbox.shown, exc_info=True)
        finally:
            context.computer = None
            _forget(session.sandbox, computer)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(remove_folders, session.sandbox, control, shared)
            context.closed.set()

    async def restart(self, context_id: str) -> None:
        context = self.get(context_id)
        computer = context.computer if not context.default else self.sandbox.session.computer
        if computer is not None:
            await computer.arestart(context.lmc_language)

    async def remove(self, context_id: str) -> None:
        context = self.get(context_id)
        if context.default:
            self._defaults.pop(context.language, None)
            computer = self.sandbox.session.computer
            if computer is not None:
                await computer.arestart(context.lmc_language)
            return
        self._contexts.pop(context.id, None)
        context.stop.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(30):
            await context.closed.wait()

    async def close(self) -> None:
        """End every context (the sandbox ends)."""
        self._closing = True
        closing = list(self._contexts.values())
        self._contexts.clear()
        for context in closing:
            context.stop.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(30):
            for context in closing:
                await context.closed.wait()


def _forget(sandbox: Any, computer: Computer) -> None:
    """Drop a closed context's Computer from the sandbox's (closed with it otherwise)."""
    computers = getattr(sandbox, "_computers", None)
    if isinstance(computers, list) and computer in computers:
        computers.remove(computer)


def _placed(cwd: str) -> tuple[str, str | None]:
    """A context's ``cwd`` as shown, and the part of it below the sandbox's home
    (``""``: the home; None: elsewhere, gone to by code once it runs)."""
    if not cwd.startswith("/") or "\x00" in cwd or len(cwd) > 4096:
        raise E2BError(f"cwd must be an absolute path, not {cwd[:100]!r}", 400)
    path = PurePosixPath(cwd)
    if ".." in path.parts:
        raise E2BError(f"cwd may not contain '..': {cwd[:100]!r}", 400)
    home = PurePosixPath(SANDBOX_HOME)
    if path == home:
        return str(path), ""
    if path.is_relative_to(home):
        return str(path), str(path.relative_to(home))
    return str(path), None


def contexts_of(door: Door, sandbox: E2BSandbox) -> Contexts:
    """The contexts of ``sandbox``, made on first use (and closed with it)."""
    contexts = sandbox.layers.get(LAYER)
    if isinstance(contexts, Contexts):
        return contexts
    contexts = Contexts(door, sandbox)
    sandbox.layers[LAYER] = contexts
    sandbox.closers.append(contexts.close)
    return contexts
