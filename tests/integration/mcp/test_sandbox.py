"""``lmc mcp --sandbox``: the client's code runs in a bubblewrap sandbox, whose
working directory the file tools read and write."""

from __future__ import annotations

import base64
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="the [mcp] extra (mcp 2.x) is not installed")

from lmc_runtime.sandbox import sandbox_available

from .client import Client, http_client_of, http_server, status, stdio_client_of, texts, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secret() -> Iterator[Path]:
    """A host file outside the sandbox, which its code must not see."""
    with tempfile.TemporaryDirectory(prefix="lmc-mcp-host-") as folder:
        path = Path(folder) / "secret.txt"
        path.write_text("host only")
        yield path


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    availability = sandbox_available()
    if not availability.available:
        pytest.skip(f"bubblewrap cannot run here: {availability.reason}")
    with tempfile.TemporaryDirectory(prefix="lmc-") as data:
        os.chmod(data, 0o711)  # sandboxes run as host uids of their own: let them pass
        with stdio_client_of("--sandbox", "--data-dir", data) as opened:
            yield opened


def test_the_file_tools_are_offered(client: Client) -> None:
    assert {"read_file", "write_file", "list_files"} <= set(client.tools())


def test_code_runs_in_the_sandbox(client: Client, secret: Path) -> None:
    code = f"test -e {secret} && echo visible || echo hidden; pwd"
    result = client.execute(code, language="shell")
    assert status(result) == "ok", texts(result)
    assert "hidden" in texts(result)


def test_files_written_by_the_tool_are_the_codes_and_back(client: Client) -> None:
    written = client.call("write_file", path="in/data.txt", content="hello sandbox")
    assert not written.is_error, texts(written)
    assert written.structured_content is not None and written.structured_content["size"] == 13
    code = "cat in/data.txt; { printf '\\000\\377'; cat in/data.txt; } > out.bin"
    result = client.execute(code, language="shell")
    assert status(result) == "ok" and "hello sandbox" in texts(result), texts(result)
    listing = client.call("list_files")
    assert listing.structured_content is not None
    names = {entry["name"]: entry["kind"] for entry in listing.structured_content["entries"]}
    assert names["in"] == "directory" and names["out.bin"] == "file"
    binary = client.call("read_file", path="out.bin")
    assert binary.structured_content is not None
    assert binary.structured_content["encoding"] == "base64"
    assert base64.b64decode(texts(binary)) == b"\x00\xffhello sandbox"
    text = client.call("read_file", path="in/data.txt")
    assert texts(text) == "hello sandbox"


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "missing.txt"])
def test_paths_outside_or_missing_are_error_results(client: Client, path: str) -> None:
    result = client.call("read_file", path=path)
    assert result.is_error and path in texts(result)


def test_over_http_each_session_has_a_sandbox_of_its_own() -> None:
    """Regression guard: two MCP sessions must never share a sandbox, and one that
    ends must leave nothing of its sandbox behind."""
    with tempfile.TemporaryDirectory(prefix="lmc-") as data:
        os.chmod(data, 0o711)
        with http_server("--sandbox", "--data-dir", data) as server:
            with http_client_of(server.url) as first, http_client_of(server.url) as second:
                assert not first.call("write_file", path="mine.txt", content="first").is_error
                # Both are at /home/user, each in a folder of its own.
                seen = [texts(c.execute("cat mine.txt", language="shell")) for c in (first, second)]
                assert "first" in seen[0] and "first" not in seen[1], seen
                listing = second.call("list_files").structured_content
                assert listing is not None and listing["entries"] == []
                assert len(os.listdir(data)) == 2
            wait_until(lambda: not os.listdir(data), 45, "the ended sessions' sandboxes remain")


def test_a_cut_output_is_named_for_read_output_and_read_whole_through_it(client: Client) -> None:
    """Guards the truncation note of MCP's sandbox: it named the host's path of the
    saved output (``.../disk/output/...txt``), which an MCP client cannot read and
    which tells it where the server keeps its data. It names ``output://NAME``, and
    the read_output tool gives the whole output back, a piece at a time."""
    assert "read_output" in client.tools()
    lines = 40_000
    result = client.execute(f"for i in range({lines}):\n    print(f'line {{i:06d}}')")
    shown = texts(result)
    assert status(result) == "ok", shown[-500:]
    data_dir = str(Path(tempfile.gettempdir()))
    notes = [line for line in shown.splitlines() if "output://" in line]
    assert notes, shown[-2000:]
    assert "/disk/output" not in shown and data_dir not in " ".join(notes), notes
    name = "output://" + notes[0].split("output://", 1)[1].split()[0].rstrip(".;,)")
    whole, offset, calls = "", 0, 0
    while offset is not None:
        piece = client.call("read_output", output=name, offset=offset, length=200_000)
        assert not piece.is_error, texts(piece)
        info = piece.structured_content
        assert info is not None and info["offset"] == offset
        whole += texts(piece).split("\n[lmc] ", 1)[0] if info["next_offset"] else texts(piece)
        offset, calls = info["next_offset"], calls + 1
        assert calls < 10
    assert calls > 1  # it came in pieces
    assert whole == "".join(f"line {i:06d}\n" for i in range(lines))


@pytest.mark.parametrize("name", ["output://../../etc/passwd", "/etc/passwd", "output://none.txt"])
def test_read_output_reads_only_saved_outputs(client: Client, name: str) -> None:
    result = client.call("read_output", output=name)
    assert result.is_error, texts(result)
    assert "root:" not in texts(result)
