"""open_store: which store a setting names; and the PostgreSQL store's extra,
imported only when it is used."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from lmc_runtime.errors import MissingExtra, StoreError
from lmc_runtime.store import JanThreadStore, open_store


@pytest.mark.parametrize("spec", [None, ""])
def test_no_store_is_the_jan_folder_in_the_data_dir(tmp_path: Path, spec: str | None) -> None:
    store = open_store(spec, tmp_path)
    assert isinstance(store, JanThreadStore) and store.root == tmp_path
    store.create("t1")
    assert (tmp_path / "threads" / "t1" / "thread.json").is_file()


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("bogus://user:pw@host/db", "'bogus://...'"),
        ("sqlite:///tmp/x.db", "'sqlite://...'"),
        ("just-a-word", "(not a URL)"),
    ],
)
def test_an_unknown_store_is_a_store_error_in_one_line(
    tmp_path: Path, spec: str, shown: str
) -> None:
    with pytest.raises(StoreError) as caught:
        open_store(spec, tmp_path)
    text = str(caught.value)
    assert text.startswith(f"unknown thread store {shown}: give a postgresql:// URL")
    assert "pw" not in text and "\n" not in text


def test_importing_the_stores_does_not_import_psycopg() -> None:
    code = "import sys, lmc_runtime.store; print('psycopg' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"


def test_without_psycopg_the_postgres_store_is_missing_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "lmc_runtime.store.postgres", raising=False)
    with pytest.raises(MissingExtra) as caught:
        importlib.import_module("lmc_runtime.store").PostgresThreadStore  # noqa: B018
    assert "pip install 'lmc-runtime[postgres]'" in str(caught.value)
    with pytest.raises(MissingExtra):
        open_store("postgresql://lmc@127.0.0.1/lmc", "unused")
