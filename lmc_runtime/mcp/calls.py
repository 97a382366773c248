"""What each tool does in a workspace, and what it answers.

Errors a tool runs into (a refused path, a lost remote session, a workspace
that has closed) are its error result, never an exception: the model reads them.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import mimetypes
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from pydantic import BaseModel

from ..errors import LMCError
from .files import Entry, Files
from .pool import Slot
from .results import Report, describe, error_result, text_result
from .tools import Execute, ListFiles, ReadFile, ReadOutput, Restart, WriteFile

__all__ = ["MAX_READ_BYTES", "Progress", "call_tool"]

#: Reports progress: how many messages so far, and what the last one says.
Progress = Callable[[int, str], Awaitable[None]]

#: The largest file ``read_file`` returns (its content travels in one message).
MAX_READ_BYTES = 8 << 20

_Call = Callable[[Slot, Any, Progress], Awaitable[types.CallToolResult]]


def _failure(what: str, exc: BaseException) -> types.CallToolResult:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return error_result(f"{what}: {reason or type(exc).__name__}")


async def execute(slot: Slot, args: Execute, progress: Progress) -> types.CallToolResult:
    """Run the code; its output, images and status. A message that cannot run
    (an unknown or unavailable language) is answered as the computer answers it."""
    message: dict[str, object] = {
        "role": "assistant",
        "type": "code",
        "format": args.language,
        "content": args.code,
    }
    report = Report()
    async with slot.claim() as workspace:
        outs = workspace.computer.arun(message, timeout=args.timeout)
        async with contextlib.aclosing(outs):
            count = 0
            async for out in outs:
                report.add(out)
                said = describe(out)
                if said is not None:
                    count += 1
                    await progress(count, said)
    return report.result()


async def interrupt(slot: Slot, args: BaseModel, progress: Progress) -> types.CallToolResult:
    assert slot.workspace is not None
    await slot.workspace.computer.ainterrupt()
    return text_result("[lmc] interrupted the running code (if any); its state is kept")


async def restart(slot: Slot, args: Restart, progress: Progress) -> types.CallToolResult:
    assert slot.workspace is not None
    await slot.workspace.computer.arestart(args.language)
    return text_result(f"[lmc] restarted {args.language}: its state is gone")


async def languages(slot: Slot, args: BaseModel, progress: Progress) -> types.CallToolResult:
    assert slot.workspace is not None
    lines, listed = [], []
    for status in slot.workspace.computer.languages.values():
        aliases = f" ({', '.join(status.aliases)})" if status.aliases else ""
        state = "runs here" if status.available else f"unavailable: {status.reason}"
        lines.append(f"{status.name}{aliases}: {state}")
        listed.append(
            {
                "name": status.name,
                "available": status.available,
                "reason": status.reason,
                "aliases": list(status.aliases),
            }
        )
    return text_result("\n".join(lines), {"languages": listed})


def _files(slot: Slot) -> Files:
    assert slot.workspace is not None and slot.workspace.files is not None
    return slot.workspace.files


async def read_file(slot: Slot, args: ReadFile, progress: Progress) -> types.CallToolResult:
    """Text as text; a PNG, JPEG, GIF or WebP as an image; other bytes as base64."""
    data = await _files(slot).read(args.path, MAX_READ_BYTES)
    info = {"path": args.path, "size": len(data)}
    mime = mimetypes.guess_type(args.path)[0] or ""
    if mime in ("image/png", "image/jpeg", "image/gif", "image/webp"):
        image = types.ImageContent(
            type="image", data=base64.b64encode(data).decode(), mime_type=mime
        )
        return types.CallToolResult(content=[image], structured_content={**info, "mime": mime})
    try:
        return text_result(data.decode("utf-8"), {**info, "encoding": "text"})
    except UnicodeDecodeError:
        encoded = base64.b64encode(data).decode()
        return text_result(encoded, {**info, "encoding": "base64"})


async def write_file(slot: Slot, args: WriteFile, progress: Progress) -> types.CallToolResult:
    try:
        if args.encoding == "base64":
            data = base64.b64decode(args.content, validate=True)
        else:
            data = args.content.encode("utf-8")
    except (binascii.Error, UnicodeEncodeError) as exc:
        return _failure(f"write_file: {args.path}: the content is not {args.encoding}", exc)
    entry = await _files(slot).write(args.path, data)
    return text_result(f"wrote {entry['size']} bytes to {entry['path']}", entry)


def _line(entry: Entry) -> str:
    suffix = "/" if entry["kind"] == "directory" else ""
    return f"{entry['kind']:<9} {entry['size']:>10}  {entry['name']}{suffix}"


async def list_files(slot: Slot, args: ListFiles, progress: Progress) -> types.CallToolResult:
    entries = await _files(slot).list(args.path)
    shown = "\n".join(_line(entry) for entry in entries) or "(empty)"
    return text_result(shown, {"path": args.path, "entries": entries})


async def read_output(slot: Slot, args: ReadOutput, progress: Progress) -> types.CallToolResult:
    """A piece of a saved whole output, as text, and where the next one starts."""
    assert slot.workspace is not None and slot.workspace.outputs is not None
    piece = await slot.workspace.outputs.read(args.output, args.offset, args.length)
    rest = piece.total - piece.end
    info: dict[str, Any] = {
        "name": piece.name,
        "offset": piece.offset,
        "size": len(piece.data),
        "total": piece.total,
        "next_offset": piece.end if rest > 0 else None,
    }
    text = piece.text()
    if rest > 0:
        text += f"\n[lmc] {rest} more bytes: read_output with offset={piece.end}"
    return text_result(text, info)


_CALLS: dict[str, _Call] = {
    "execute": execute,
    "interrupt": interrupt,
    "restart": restart,
    "languages": languages,
    "read_file": read_file,
    "write_file": write_file,
    "list_files": list_files,
    "read_output": read_output,
}


async def call_tool(
    name: str, slot: Slot, args: BaseModel, progress: Progress
) -> types.CallToolResult:
    """Call tool ``name`` (its arguments already parsed) in ``slot``'s workspace."""
    what = name
    path = getattr(args, "path", getattr(args, "output", None))
    if isinstance(path, str):
        what = f"{name}: {path or '.'}"
    try:
        return await _CALLS[name](slot, args, progress)
    except (LMCError, OSError, ValueError) as exc:
        return _failure(what, exc)
