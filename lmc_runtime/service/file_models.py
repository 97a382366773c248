"""The typed bodies of the files API: what it is asked and what it answers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..sandbox import fileops

__all__ = [
    "DirectoryListing",
    "FileInfo",
    "MakeDirectory",
    "MoveRequest",
    "declared_body",
    "file_info",
    "listing",
]

_PATH = "A path relative to the session's cwd (no '..', no absolute path)."


class FileInfo(BaseModel):
    """One file or folder of a session, as ``lstat`` saw it (never followed)."""

    path: str = Field(description="Relative to the session's cwd.")
    name: str = Field(description="The last component of the path.")
    kind: Literal["file", "directory", "symlink", "other"]
    size: int
    mtime: float = Field(description="The last modification, in unix seconds.")


class DirectoryListing(BaseModel):
    """``GET /v1/sessions/{id}/list``: a folder's entries, sorted by name."""

    path: str = Field(description="The folder listed ('' is the session's cwd).")
    entries: list[FileInfo]
    truncated: bool = Field(
        default=False,
        description=f"True when the folder holds more than the {fileops.MAX_ENTRIES} "
        "entries a listing returns.",
    )


class MakeDirectory(BaseModel):
    """``POST /v1/sessions/{id}/mkdir``."""

    model_config = ConfigDict(extra="forbid", strict=True)  # "yes" is no boolean

    path: str = Field(max_length=4096, description=_PATH)
    parents: bool = Field(
        default=False,
        description="Make missing folders on the way; an existing folder is then no error.",
    )


class MoveRequest(BaseModel):
    """``POST /v1/sessions/{id}/move``: missing folders on the destination's way are made."""

    model_config = ConfigDict(extra="forbid", strict=True)  # "yes" is no boolean

    source: str = Field(max_length=4096, description=_PATH)
    destination: str = Field(max_length=4096, description=_PATH)
    overwrite: bool = Field(
        default=False, description="Replace an existing file, or an empty folder by a folder."
    )


def declared_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` declaring ``model`` as a route's JSON body, inline (the
    route reads and checks the body itself, with the service's size limit)."""
    schema = model.model_json_schema()
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": schema}},
        }
    }


def relative(path: str, base: str) -> str:
    """``path`` (from the working directory) relative to its folder ``base``."""
    if not base:
        return path
    return "" if path == base else path.removeprefix(base + "/")


def file_info(info: fileops.FileInfo, base: str = "") -> FileInfo:
    """The API's view of ``info``, its path relative to ``base`` (the session's cwd)."""
    view = FileInfo.model_validate(info, from_attributes=True)
    return view.model_copy(update={"path": relative(view.path, base)}) if base else view


def listing(found: fileops.Listing, base: str = "") -> DirectoryListing:
    """The API's view of ``found``, its paths relative to ``base``."""
    return DirectoryListing(
        path=relative(found.path, base),
        entries=[file_info(entry, base) for entry in found.entries],
        truncated=found.truncated,
    )
