"""A kernel revived from a checkpoint runs its start file again, in an image
where the kernel of the checkpoint ran it: ``Image.save`` is wrapped once.

Regression: each revival wrapped PIL's ``Image.save`` again, so that in a rolled
back or forked kernel each saved file was shown once more per revival (and a
save by matplotlib, which is not shown, was: the inner wrapper saw the outer one
as its caller)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from .kernel_files import kernel_module


def _displays(tag: str, shown: list[tuple[str, Any]]) -> Any:
    module = kernel_module("lmc_displays", f"_lmc_displays_{tag}")
    module._show_saved = lambda fp: shown.append((tag, fp))
    return module


def test_a_revived_kernel_shows_a_saved_image_once(monkeypatch: pytest.MonkeyPatch) -> None:
    saved: list[Any] = []

    class Image:
        def save(self, fp: Any, format: Any = None, **params: Any) -> None:
            saved.append(fp)

    pil, image_module = types.ModuleType("PIL"), types.ModuleType("PIL.Image")
    image_module.Image = Image  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "PIL", pil)
    monkeypatch.setitem(sys.modules, "PIL.Image", image_module)
    shown: list[tuple[str, Any]] = []
    _displays("checkpointed", shown).install_image_save()  # the kernel of the checkpoint
    _displays("revived", shown).install_image_save()  # its start file, run again
    Image().save("picture.png")
    assert saved == ["picture.png"]
    assert len(shown) == 1
