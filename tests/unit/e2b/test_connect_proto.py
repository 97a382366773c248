"""envd's message types: the committed protoc output is what the schema in
docs/reference/envd/ makes (checked where grpcio-tools is installed), and it
reads and writes the wire forms E2B's SDKs use."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from google.protobuf import json_format

from lmc_runtime.e2b.envd.proto import filesystem_pb2 as fs
from lmc_runtime.e2b.envd.proto import process_pb2 as proc

ROOT = Path(__file__).resolve().parents[3]
PROTO = ROOT / "lmc_runtime" / "e2b" / "envd" / "proto"
SCHEMA = ROOT / "docs" / "reference" / "envd"


def test_regenerating_gives_the_committed_files(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools", reason="grpcio-tools is a development tool only")
    spec = importlib.util.spec_from_file_location("_generate", SCHEMA / "generate.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    sys.modules["_generate"] = generator
    try:
        spec.loader.exec_module(generator)
        written = generator.generate(tmp_path)
    finally:
        del sys.modules["_generate"]
    assert sorted(p.name for p in written) == [
        "filesystem_pb2.py",
        "filesystem_pb2.pyi",
        "process_pb2.py",
        "process_pb2.pyi",
    ]
    for made in written:
        assert made.read_text() == (PROTO / made.name).read_text(), made.name


def test_nothing_but_the_generated_modules_is_in_the_package() -> None:
    """The schema and its generator are development files, outside the package."""
    assert sorted(p.name for p in PROTO.iterdir() if p.suffix != ".pyc" and p.is_file()) == [
        "__init__.py",
        "filesystem_pb2.py",
        "filesystem_pb2.pyi",
        "process_pb2.py",
        "process_pb2.pyi",
    ]
    assert sorted(p.name for p in SCHEMA.glob("*.proto")) == ["filesystem.proto", "process.proto"]


def test_entry_info_json_as_the_sdk_reads_it() -> None:
    entry = fs.EntryInfo(name="a.txt", type=fs.FILE_TYPE_FILE, path="/home/user/a.txt", size=3)
    entry.modified_time.FromSeconds(1_700_000_000)
    entry.symlink_target = ""
    body = json_format.MessageToDict(fs.StatResponse(entry=entry))
    assert body["entry"]["type"] == "FILE_TYPE_FILE"
    assert body["entry"]["modifiedTime"] == "2023-11-14T22:13:20Z"
    # An optional field set to "" is sent: the SDK tells "no link" from "a link to ''".
    assert body["entry"]["symlinkTarget"] == ""


def test_process_event_bytes_are_base64_in_json() -> None:
    event = proc.ProcessEvent(data=proc.ProcessEvent.DataEvent(stdout=b"hi\n"))
    assert json_format.MessageToDict(event) == {"data": {"stdout": "aGkK"}}
