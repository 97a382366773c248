"""The tools ``lmc mcp`` offers: their names, descriptions and arguments.

Each tool's arguments are a pydantic model; its JSON schema is the tool's
``inputSchema`` and arguments that do not fit it are the tool's error result.
The file tools are offered only where the workspace has files of its own (a
sandbox, a remote session).
"""

from __future__ import annotations

from typing import Any, Literal

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .results import EXECUTE_OUTPUT_SCHEMA

__all__ = [
    "Execute",
    "ListFiles",
    "NoArguments",
    "ReadFile",
    "Restart",
    "WriteFile",
    "parse_arguments",
    "tool_list",
]


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoArguments(_Arguments):
    """A tool without arguments."""


class Execute(_Arguments):
    language: str = Field(
        description="python, shell (bash), javascript, typescript, r, java, html... "
        "(the languages tool lists what runs here)"
    )
    code: str = Field(description="the code to run; state persists between calls")
    timeout: float | None = Field(
        default=None, gt=0, description="seconds the code may run before it is interrupted"
    )


class Restart(_Arguments):
    language: str = Field(description="the language whose interpreter starts again")


class ReadFile(_Arguments):
    path: str = Field(description="relative to the working directory")


class WriteFile(_Arguments):
    path: str = Field(description="relative to the working directory; folders are made")
    content: str = Field(description="the file's content")
    encoding: Literal["text", "base64"] = Field(
        default="text", description="text (written as UTF-8) or base64 (any bytes)"
    )


class ListFiles(_Arguments):
    path: str = Field(default="", description="a folder relative to the working directory")


_EXECUTE = (
    "Run code on this computer and return its output: stdout and stderr, results, "
    "errors with their traceback, and plots as images. Interpreters keep their state "
    "(variables, imports, the shell's directory) between calls. The result ends with "
    "the status as JSON: ok, error, timeout, interrupted..."
)

#: name: (arguments, description, read only, needs files)
_TOOLS: dict[str, tuple[type[_Arguments], str, bool, bool]] = {
    "execute": (Execute, _EXECUTE, False, False),
    "interrupt": (NoArguments, "Interrupt the code that is running now.", False, False),
    "restart": (
        Restart,
        "Restart one language's interpreter: its state (variables, imports) is lost.",
        False,
        False,
    ),
    "languages": (
        NoArguments,
        "List the languages, whether each runs here, and why not.",
        True,
        False,
    ),
    "read_file": (
        ReadFile,
        "Read a file of the working directory: text as text, images as images, "
        "other bytes as base64.",
        True,
        True,
    ),
    "write_file": (WriteFile, "Write a file in the working directory.", False, True),
    "list_files": (ListFiles, "List a folder of the working directory.", True, True),
}


def _schema(model: type[_Arguments]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def tool_list(has_files: bool) -> list[types.Tool]:
    """The tools offered; the file tools only when ``has_files``."""
    tools = []
    for name, (model, description, read_only, needs_files) in _TOOLS.items():
        if needs_files and not has_files:
            continue
        tools.append(
            types.Tool(
                name=name,
                description=description,
                input_schema=_schema(model),
                output_schema=EXECUTE_OUTPUT_SCHEMA if name == "execute" else None,
                annotations=types.ToolAnnotations(read_only_hint=read_only),
            )
        )
    return tools


def parse_arguments(name: str, arguments: dict[str, Any] | None, has_files: bool) -> BaseModel:
    """The arguments of tool ``name``; ``ValueError`` naming what is wrong."""
    entry = _TOOLS.get(name)
    if entry is None or (entry[3] and not has_files):
        offered = ", ".join(tool.name for tool in tool_list(has_files))
        raise ValueError(f"there is no tool {name!r}; the tools are {offered}")
    try:
        return entry[0].model_validate(arguments or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ValueError(f"{name}: bad arguments: {problems}") from None
