"""The tools ``lmc mcp`` offers: their names, descriptions and arguments.

Each tool's arguments are a pydantic model; its JSON schema is the tool's
``inputSchema`` and arguments that do not fit it are the tool's error result.
The file tools are offered only where the workspace has files of its own (a
sandbox, a remote session); ``read_output`` where it keeps the whole outputs
its truncation notes name (a sandbox).
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
    "ReadOutput",
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


#: The most ``read_output`` returns by default, and at all, in one call.
OUTPUT_PIECE_BYTES = 64 << 10
MAX_OUTPUT_PIECE_BYTES = 1 << 20


class ReadOutput(_Arguments):
    output: str = Field(description="the saved output, as the note names it: output://NAME")
    offset: int = Field(default=0, ge=0, description="the byte to start at")
    length: int = Field(
        default=OUTPUT_PIECE_BYTES,
        gt=0,
        le=MAX_OUTPUT_PIECE_BYTES,
        description="how many bytes to return at most",
    )


_EXECUTE = (
    "Run code on this computer and return its output: stdout and stderr, results, "
    "errors with their traceback, and plots as images. Interpreters keep their state "
    "(variables, imports, the shell's directory) between calls. The result ends with "
    "the status as JSON: ok, error, timeout, interrupted..."
)

_READ_OUTPUT = (
    "Read the whole output of a run whose output was too long and was cut: its note "
    "says where the whole output is saved (output://NAME). Returns a piece at a time, "
    "from offset; the result says where the next piece starts."
)

#: What a tool needs of the workspace: nothing, files of its own, or saved outputs.
_Needs = Literal["", "files", "outputs"]

#: name: (arguments, description, read only, needs)
_TOOLS: dict[str, tuple[type[_Arguments], str, bool, _Needs]] = {
    "execute": (Execute, _EXECUTE, False, ""),
    "interrupt": (NoArguments, "Interrupt the code that is running now.", False, ""),
    "restart": (
        Restart,
        "Restart one language's interpreter: its state (variables, imports) is lost.",
        False,
        "",
    ),
    "languages": (
        NoArguments,
        "List the languages, whether each runs here, and why not.",
        True,
        "",
    ),
    "read_file": (
        ReadFile,
        "Read a file of the working directory: text as text, images as images, "
        "other bytes as base64.",
        True,
        "files",
    ),
    "write_file": (WriteFile, "Write a file in the working directory.", False, "files"),
    "list_files": (ListFiles, "List a folder of the working directory.", True, "files"),
    "read_output": (ReadOutput, _READ_OUTPUT, True, "outputs"),
}


def _offered(needs: _Needs, has_files: bool, has_outputs: bool) -> bool:
    return needs == "" or (needs == "files" and has_files) or (needs == "outputs" and has_outputs)


def _schema(model: type[_Arguments]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def tool_list(has_files: bool, has_outputs: bool = False) -> list[types.Tool]:
    """The tools offered; the file tools only when ``has_files``, ``read_output``
    only when ``has_outputs``."""
    tools = []
    for name, (model, description, read_only, needs) in _TOOLS.items():
        if not _offered(needs, has_files, has_outputs):
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


def parse_arguments(
    name: str, arguments: dict[str, Any] | None, has_files: bool, has_outputs: bool = False
) -> BaseModel:
    """The arguments of tool ``name``; ``ValueError`` naming what is wrong."""
    entry = _TOOLS.get(name)
    if entry is None or not _offered(entry[3], has_files, has_outputs):
        offered = ", ".join(tool.name for tool in tool_list(has_files, has_outputs))
        raise ValueError(f"there is no tool {name!r}; the tools are {offered}")
    try:
        return entry[0].model_validate(arguments or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ValueError(f"{name}: bad arguments: {problems}") from None
