"""Saved whole outputs read back by name: only plain files of the output folder."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="the [mcp] extra (mcp 2.x) is not installed")

from lmc_runtime.mcp.outputs import OutputPiece, SavedOutputs

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_an_output_is_read_in_pieces_by_its_address_or_name(tmp_path: Path) -> None:
    (tmp_path / "python-m1-ab12.txt").write_text("0123456789")
    outputs = SavedOutputs(tmp_path)
    first = await outputs.read("output://python-m1-ab12.txt", 0, 4)
    assert (first.text(), first.end, first.total) == ("0123", 4, 10)
    rest = await outputs.read("python-m1-ab12.txt", 4, 100)
    assert (rest.text(), rest.end) == ("456789", 10)
    assert (await outputs.read("python-m1-ab12.txt", 50, 4)).data == b""


@pytest.mark.parametrize("name", ["output://../secret", "a/b.txt", ".hidden", "", "output://"])
async def test_a_name_that_is_not_a_saved_outputs_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="not a saved output"):
        await SavedOutputs(tmp_path).read(name, 0, 10)


async def test_a_link_or_a_folder_in_the_output_folder_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("host only")
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    (outputs / "link.txt").symlink_to(secret)
    (outputs / "folder.txt").mkdir()
    saved = SavedOutputs(outputs)
    with pytest.raises(OSError):
        await saved.read("link.txt", 0, 100)
    with pytest.raises(ValueError, match="not a saved output"):
        await saved.read("folder.txt", 0, 100)
    with pytest.raises(FileNotFoundError, match=r"no saved output missing\.txt"):
        await saved.read("missing.txt", 0, 100)


def test_a_piece_leaves_out_a_character_cut_at_either_end() -> None:
    data = "aé€b".encode()  # 1 + 2 + 3 + 1 bytes
    assert OutputPiece("x", 0, data[:4], len(data)).text() == "aé"
    assert OutputPiece("x", 2, data[2:], len(data)).text() == "€b"
    assert OutputPiece("x", 4, data[4:], len(data)).text() == "b"
