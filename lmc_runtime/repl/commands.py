"""What a line typed at the prompt is: a ``%command``, a raw LMC message, or code.

Also the texts the commands print (``%help``, ``%languages``) and ``%save``'s
transcript writer; running them is the REPL's job (:mod:`.app`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..computer import LanguageStatus
from .plain import json_line

__all__ = [
    "BUILTINS",
    "Code",
    "Command",
    "RawMessage",
    "classify",
    "help_text",
    "languages_text",
    "save_transcript",
]

#: The REPL's own commands; any other ``%name`` naming a language switches to it.
BUILTINS: Mapping[str, str] = MappingProxyType(
    {
        "restart": "%restart [LANGUAGE]  restart the current (or given) language; state is lost",
        "languages": "%languages          list the languages and whether they run here",
        "save": "%save FILE          write this session's messages to FILE as LMC JSON lines",
        "help": "%help               show this help",
        "exit": "%exit               leave (as Ctrl-D does)",
    }
)
_ALIASES: Mapping[str, str] = MappingProxyType({"quit": "exit", "lang": "languages"})
_COMMAND = re.compile(r"%([A-Za-z][A-Za-z0-9_+.#-]*)(?:\s+(.*))?")


@dataclass(frozen=True)
class Command:
    """``%name argument``."""

    name: str
    argument: str


@dataclass(frozen=True)
class RawMessage:
    """A line starting with ``{``: the parsed JSON, or why it is not JSON."""

    data: Any
    problem: str | None


@dataclass(frozen=True)
class Code:
    """Code for the current language."""

    text: str


def _parse_json(text: str) -> RawMessage:
    try:
        return RawMessage(json.loads(text), None)
    except json.JSONDecodeError as exc:
        return RawMessage(None, f"{exc.msg} at line {exc.lineno}, column {exc.colno}")
    except RecursionError:
        return RawMessage(None, "it is nested too deeply")


def classify(text: str) -> Command | RawMessage | Code | None:
    """What ``text`` (a whole input, maybe several lines) asks for; None if blank."""
    stripped = text.strip()
    if not stripped:
        return None
    if stripped.startswith("{"):
        return _parse_json(stripped)
    match = _COMMAND.fullmatch(stripped) if "\n" not in stripped else None
    if match is not None:
        name = match.group(1)
        return Command(_ALIASES.get(name.lower(), name), (match.group(2) or "").strip())
    return Code(text.rstrip())


def help_text(current: str, languages: Iterable[LanguageStatus]) -> str:
    """The text of ``%help``."""
    runnable = [f"%{s.name}" for s in languages if s.available]
    return "\n".join(
        [
            f"Type {current} code and press Enter: a complete statement runs, an incomplete",
            "one goes on to the next line. A blank line or Alt-Enter runs what is there.",
            "",
            "Switch languages: "
            + (", ".join(runnable) or "(none available)")
            + " (aliases work too: %js, %bash, %py)",
            *BUILTINS.values(),
            "A line starting with { is sent as a raw LMC message, e.g.",
            '  {"role": "assistant", "type": "code", "format": "python", "content": "print(1)"}',
            "Any other %line is code for the current language (IPython magics in Python).",
            "",
            "Ctrl-C interrupts running code (the session stays) or clears the line;",
            "Ctrl-D on an empty line leaves, shutting every interpreter down.",
        ]
    )


def languages_text(current: str, languages: Iterable[LanguageStatus]) -> str:
    """The text of ``%languages``."""
    rows = []
    for status in languages:
        mark = "*" if status.name == current else " "
        aliases = f" (also {', '.join(status.aliases)})" if status.aliases else ""
        state = "available" if status.available else f"unavailable: {status.reason}"
        rows.append(f"{mark} {status.name}{aliases}: {state}")
    return "\n".join(rows)


def save_transcript(path: Path, messages: Sequence[Mapping[str, Any]]) -> int:
    """Write ``messages`` to ``path`` as LMC JSON lines; return how many were written."""
    with open(path, "w", encoding="utf-8") as fh:
        for message in messages:
            fh.write(json_line(dict(message)))
    return len(messages)
