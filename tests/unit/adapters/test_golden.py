"""Golden files for each format: the conversation in ``conversation.py`` (code,
output, an image and an error) converts to exactly the stored file, and the
stored file converts back to the conversation. Set LMC_UPDATE_GOLDEN=1 to
rewrite the files after an intended format change."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.adapters import aki, jan, langchain, openai
from lmc_runtime.messages import Message

from .conversation import CONV, CONVERSATION

GOLDEN = Path(__file__).parent / "golden"

FORMATS: dict[str, tuple[Callable[[list[Message]], Any], Callable[[Any], list[Message]]]] = {
    "openai": (openai.to_openai, openai.from_openai),
    "langchain": (langchain.to_langchain, langchain.from_langchain),
    "aki": (aki.to_aki, aki.from_aki),
    "jan": (lambda ms: jan.to_jan(ms, thread_id=CONV), jan.from_jan),
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_golden_file(name: str) -> None:
    to, from_ = FORMATS[name]
    path = GOLDEN / f"{name}.json"
    produced = json.loads(json.dumps(to(CONVERSATION)))
    if os.environ.get("LMC_UPDATE_GOLDEN"):
        path.write_text(json.dumps(produced, indent=2) + "\n")
    golden = json.loads(path.read_text())
    assert produced == golden
    assert from_(golden) == CONVERSATION
