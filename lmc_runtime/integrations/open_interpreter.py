"""Open Interpreter on lmc-runtime: :func:`use_lmc` replaces the languages of
``interpreter.computer.terminal`` with lmc-runtime's.

::

    from interpreter import interpreter
    from lmc_runtime.integrations.open_interpreter import use_lmc

    use_lmc(interpreter)                                   # a local Computer
    use_lmc(interpreter, url="http://host:8000", token=t)  # a remote lmc serve
    interpreter.computer.run("python", "print(1)")

After it, ``interpreter.computer.run`` and ``interpreter.chat`` run code on
lmc-runtime and get what Open Interpreter's own languages yield: chunks of
``type``, ``format`` and ``content`` (``console``/``active_line`` with the
1-based line, ``console``/``output``, ``image``/``base64.png``,
``code``/``html``), without the final ``active_line`` null, which OI's chat
loop adds itself. ``stop()`` interrupts the running code and keeps the state;
``terminate()`` restarts the language's interpreter, so its state is gone.

Each language OI has a name for and lmc-runtime runs is replaced (Python,
Shell with OI's aliases ``bash``, ``sh``, ``zsh``..., JavaScript, Java, R,
HTML, AppleScript), TypeScript is added, and OI's others (Ruby, PowerShell,
React) are left as they are. Every OI alias of a language reaches the same
lmc-runtime interpreter, so ``bash`` and ``shell`` share one shell.

Open Interpreter itself is not a dependency: this module only uses the
attributes of the ``interpreter`` object it is given.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from ..computer import Computer
from ..computer_like import ComputerLike
from ..errors import LMCError
from ..messages import Message

__all__ = ["LANGUAGES", "LmcLanguage", "OILanguage", "to_oi_chunk", "use_lmc"]

logger = logging.getLogger(__name__)

#: The languages a remote session is created with when ``languages`` is not given.
REMOTE_LANGUAGES = ("python", "shell", "javascript")


@dataclass(frozen=True)
class OILanguage:
    """How Open Interpreter names one of lmc-runtime's languages."""

    lmc: str
    name: str
    aliases: tuple[str, ...]
    file_extension: str


#: OI's name, its aliases (then lmc-runtime's own) and file extension for each language.
LANGUAGES = (
    OILanguage("python", "Python", ("py", "python3", "ipython"), "py"),
    OILanguage("shell", "Shell", ("bash", "sh", "zsh", "batch", "bat"), "sh"),
    OILanguage("javascript", "JavaScript", ("js", "node"), "js"),
    OILanguage("typescript", "TypeScript", ("ts",), "ts"),
    OILanguage("java", "Java", ("jshell",), "java"),
    OILanguage("r", "R", (), "r"),
    OILanguage("html", "HTML", (), "html"),
    OILanguage("applescript", "AppleScript", ("osascript",), "applescript"),
)


def to_oi_chunk(message: Message) -> dict[str, Any] | None:
    """The chunk OI's own languages would yield for ``message``: its ``type``,
    ``format`` and ``content``; None for the final ``active_line`` null, which
    OI's chat loop yields itself once the code has run."""
    if message.is_final:
        return None
    chunk: dict[str, Any] = {"type": message.type}
    if message.format is not None:
        chunk["format"] = message.format
    chunk["content"] = message.content
    return chunk


class LmcLanguage:
    """An OI language (``run``, ``stop``, ``terminate``) on an lmc-runtime computer.

    :func:`use_lmc` makes one subclass a language, with OI's ``name``,
    ``aliases`` and ``file_extension`` and the ``computer`` to run on. OI's
    terminal makes an instance for each name the model uses (``bash`` and
    ``shell`` get one each); they all run in the computer's one interpreter.
    """

    name: ClassVar[str]
    aliases: ClassVar[list[str]]
    file_extension: ClassVar[str]
    lmc_language: ClassVar[str]
    computer: ClassVar[ComputerLike]

    def __init__(self) -> None:
        """Takes no arguments: OI's terminal reads ``__init__.__code__`` to decide
        whether to pass its computer, and this class has one of its own."""

    def run(self, code: str) -> Iterator[dict[str, Any]]:
        """Run ``code``; yield OI's chunks as they come. Leaving early stops the code."""
        for message in self.computer.run(self.lmc_language, code):
            chunk = to_oi_chunk(message)
            if chunk is not None:
                yield chunk

    def stop(self) -> None:
        """Interrupt the running code; the interpreter and its state are kept."""
        self.computer.interrupt(self.lmc_language)

    def terminate(self) -> None:
        """Restart the interpreter (if it ran): its state is gone, as when OI ends its
        process. OI ends every language in turn (``interpreter.reset()``): one that
        cannot restart (a remote session without it, a lost connection) is logged."""
        try:
            self.computer.restart(self.lmc_language)
        except LMCError as exc:
            logger.warning("restarting %s failed: %s", self.lmc_language, exc)


class _InterruptingEvent(threading.Event):
    """OI's ``stop_event`` (its async server sets it to stop a reply), which also
    interrupts the code running on the computer: OI's own Python polls it."""

    def __init__(self, was_set: bool, interrupt: Callable[[], None]) -> None:
        super().__init__()
        self._interrupt = interrupt
        if was_set:
            super().set()

    def set(self) -> None:
        super().set()
        self._interrupt()


def language_classes(
    computer: ComputerLike, languages: tuple[OILanguage, ...] = LANGUAGES
) -> list[type[LmcLanguage]]:
    """One :class:`LmcLanguage` subclass for each of ``languages``, running on ``computer``."""
    return [
        type(
            f"Lmc{spec.name}",
            (LmcLanguage,),
            {
                "name": spec.name,
                "aliases": list(spec.aliases),
                "file_extension": spec.file_extension,
                "lmc_language": spec.lmc,
                "computer": computer,
                "__module__": __name__,
            },
        )
        for spec in languages
    ]


def _install(terminal: Any, classes: list[type[LmcLanguage]]) -> None:
    """Put ``classes`` in ``terminal.languages`` in place of those with their names
    (appending the others), and end the running instances of those replaced."""
    ours = {cls.name.lower(): cls for cls in classes}
    installed: list[Any] = []
    for lang in terminal.languages:
        replacement = ours.pop(str(lang.name).lower(), None)
        installed.append(replacement or lang)
    installed.extend(ours.values())
    replaced = {str(cls.name).lower() for cls in classes}
    active: dict[str, Any] = terminal._active_languages
    for key, instance in list(active.items()):
        if str(getattr(instance, "name", "")).lower() in replaced:
            try:
                instance.terminate()
            except Exception:  # OI's own terminate can fail on a dead process
                logger.warning("ending Open Interpreter's %s failed", key, exc_info=True)
            del active[key]
    terminal.languages = installed


def use_lmc(
    interpreter: Any,
    computer: ComputerLike | None = None,
    *,
    url: str | None = None,
    token: str | None = None,
    languages: list[str] | None = None,
) -> ComputerLike:
    """Run ``interpreter``'s code on lmc-runtime; the computer it runs on.

    ``computer`` is a :class:`~lmc_runtime.Computer` or a
    :class:`~lmc_runtime.remote.RemoteComputer` of the caller's, who closes it.
    ``url`` (with ``token``, default ``$LMC_TOKEN``) creates a session of the
    ``lmc serve`` there with ``languages`` (by default python, shell and
    javascript; it needs the ``[client]`` extra). With neither, a local
    ``Computer()``. A computer made here is closed when ``interpreter`` is
    collected or the program exits. Languages OI started before are ended.
    """
    if computer is not None and url is not None:
        raise TypeError("give a computer or a url, not both")
    if languages is not None and url is None:
        raise TypeError("languages= is for a remote session (url=)")
    owned = computer is None
    if url is not None:
        from ..remote import RemoteComputer

        computer = RemoteComputer(url, token=token, languages=languages or list(REMOTE_LANGUAGES))
    elif computer is None:
        computer = Computer()
    _install(interpreter.computer.terminal, language_classes(computer))
    stop_event = getattr(interpreter, "stop_event", None)
    if isinstance(stop_event, threading.Event):
        interpreter.stop_event = _InterruptingEvent(stop_event.is_set(), computer.interrupt)
    if owned:
        weakref.finalize(interpreter, computer.close)
    return computer
